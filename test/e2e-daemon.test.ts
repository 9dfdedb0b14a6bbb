import { transportSuite } from './helpers/transport-suite.js';
import { startServe } from './helpers/server-process.js';

transportSuite({
  name: 'git-daemon',
  async start(root, opts) {
    const s = await startServe(root, ['--git', '0', '--export-all'], opts?.namespace ? { GIT_NAMESPACE: opts.namespace } : {});
    return { url: (rel) => `git://127.0.0.1:${s.gitPort}/${rel}`, cloneArgs: [], close: async () => { await s.stop(); } };
  },
}, [0, 2]);
