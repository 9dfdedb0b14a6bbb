/** The shared end-to-end suite over the built-in SSH server, with the OpenSSH client. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { transportSuite } from './helpers/transport-suite.js';
import { gitSshEnv, sshKit, startSsh } from './helpers/ssh.js';

transportSuite({
  name: 'ssh',
  async start(root, opts) {
    const dir = mkdtempSync(join(tmpdir(), 'gitwire-ssh-kit-'));
    const kit = sshKit(dir);
    const alice = kit.user('alice');
    const args = opts?.maxPacks ? ['--max-packs', String(opts.maxPacks)] : [];
    const s = await startSsh(kit, root, args, { ...opts?.env, ...(opts?.namespace ? { GIT_NAMESPACE: opts.namespace } : {}) });
    return {
      url: (rel) => `ssh://git@127.0.0.1/${rel}`, cloneArgs: [], env: gitSshEnv(kit, alice, s.sshPort),
      close: async () => { await s.stop(); rmSync(dir, { recursive: true, force: true }); },
    };
  },
}, [0, 2]);
