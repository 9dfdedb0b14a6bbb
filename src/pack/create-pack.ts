/**
 * create_pack_file(): make the pack for the session and relay it.
 *
 * The pack comes from gitwire's own producer (./produce/, the default) or
 * from `git pack-objects` (`--pack-objects git`, and always when the
 * repository sets uploadpack.packObjectsHook, whose contract is git's
 * command line). Either goes through the same relay, pack cache and pack
 * slots.
 */
import { spawnPackObjects, type PackObjectsRequest } from './pack-objects.js';
import { PackRetry, childSource, relaySource, type PackSource, type RelayOptions, type RelayStats } from './relay.js';
import type { UploadPackSession } from '../protocol/session.js';
import { GitwireError } from '../errors.js';
import { refFormatOf } from '../repo/refs/open.js';
import { reftableRefusal } from '../util/git-version.js';
import type { Child } from '../util/spawn.js';

export async function sendPack(s: UploadPackSession): Promise<RelayStats> {
  const w = s.writer;
  const native = s.cfg.packObjectsHook === undefined && (s.opts.packObjects ?? 'native') === 'native';
  if (!native) {
    // pack-objects of a git older than 2.45 cannot open a reftable repository: say so in plain words
    const refusal = await reftableRefusal(refFormatOf(s.repo.config), s.opts.env ?? s.repo.env, 'fetch');
    if (refusal) throw new GitwireError('GW_UNSUPPORTED_REPO', refusal, { wire: refusal });
  }
  const req: PackObjectsRequest = {
    gitDir: s.repo.commonDir,
    wants: s.wants,
    haves: s.haves,
    extraEdges: s.extraEdges,
    shallow: [...s.registeredShallow.values()],
    useShallow: s.shallowNr > 0,
    thin: s.req.thinPack,
    progress: !s.req.noProgress,
    ofsDelta: s.req.ofsDelta,
    includeTag: s.req.includeTag,
    filter: s.req.filter?.spec,
    hook: s.cfg.packObjectsHook,
    env: s.opts.env ?? s.repo.env,
  };
  // the native producer is loaded on the first fetch that needs it
  const { nativePack } = native ? await import('./produce/producer.js') : { nativePack: undefined };
  const source = (): PackSource => nativePack ? nativePack(s.repo, req, { onDone: (r) => { s.stats.producer = r; } }) : childSource(spawnPackObjects(req));
  const relayOpts: RelayOptions = {
    keepalive: s.cfg.keepalive,
    quietMs: s.opts.relayQuietMs,
    stderr: s.opts.stderr ?? ((b) => { try { process.stderr.write(b); } catch { /* ignore */ } }),
  };
  const cache = s.opts.packCache;
  if (cache) {
    const { keyForRequest } = await import('./cache/key.js');
    const { sourceAsChild } = await import('./produce/as-child.js');
    const key = keyForRequest(req, s.repo);
    const lease = await cache.acquire(key, {
      objectFormat: s.repo.format,
      progress: !s.req.noProgress,
      produce: async () => {
        const release = s.opts.acquirePackSlot ? await s.opts.acquirePackSlot(w, s.sideband !== 'none', { repo: s.repo.commonDir }) : undefined;
        try {
          const child: Child = nativePack ? sourceAsChild(source()) : spawnPackObjects(req);
          return { child, release };
        } catch (e) {
          release?.();
          throw e;
        }
      },
    });
    s.stats.packCache = lease?.outcome ?? 'bypass';
    if (lease) {
      try {
        return await relaySource(lease.source, w, relayOpts);
      } catch (e) {
        if (!(e instanceof PackRetry)) throw e;
        cache.fallback('retry', key, `shared pack-objects failed before anything was sent (${lease.outcome}); running pack-objects directly`);
        s.stats.packCache = 'retry';
      } finally {
        await lease.source.abort();
      }
    }
  }
  let release: (() => void) | undefined;
  if (s.opts.acquirePackSlot) {
    // queue keepalives follow uploadpack.keepAlive when the repository sets it
    const keepalive = s.repo.config.get('uploadpack.keepalive') !== undefined ? s.cfg.keepalive : undefined;
    release = await s.opts.acquirePackSlot(w, s.sideband !== 'none', { keepalive, repo: s.repo.commonDir });
  }
  try {
    return await relaySource(source(), w, relayOpts);
  } finally {
    release?.();
  }
}
