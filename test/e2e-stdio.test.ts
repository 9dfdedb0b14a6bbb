import { join } from 'node:path';
import { BIN } from './helpers/git.js';
import { transportSuite } from './helpers/transport-suite.js';

transportSuite({
  name: 'stdio',
  async start(root, opts) {
    return {
      url: (rel) => `file://${join(root, rel)}`,
      cloneArgs: ['--upload-pack', `${BIN} upload-pack`],
      env: opts?.namespace ? { GIT_NAMESPACE: opts.namespace } : {},
      close() { /* nothing to stop */ },
    };
  },
}, [0, 1, 2]);
