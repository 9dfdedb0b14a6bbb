/** create_pack_file(): run pack-objects for the session and relay its output. */
import { spawnPackObjects } from './pack-objects.js';
import { relayPack, type RelayStats } from './relay.js';
import type { UploadPackSession } from '../protocol/session.js';

export async function sendPack(s: UploadPackSession): Promise<RelayStats> {
  const w = s.writer;
  w.sideband = s.sideband;
  let release: (() => void) | undefined;
  if (s.opts.acquirePackSlot) {
    // queue keepalives follow uploadpack.keepAlive when the repository sets it
    const keepalive = s.repo.config.get('uploadpack.keepalive') !== undefined ? s.cfg.keepalive : undefined;
    release = await s.opts.acquirePackSlot(w, s.sideband !== 'none', { keepalive });
  }
  try {
    const child = spawnPackObjects({
      gitDir: s.repo.commonDir,
      wants: s.wants,
      haves: s.haves,
      extraEdges: s.extraEdges,
      shallow: [...s.registeredShallow.values()],
      useShallow: s.shallowNr > 0,
      thin: s.thinPack,
      progress: !s.noProgress,
      ofsDelta: s.ofsDelta,
      includeTag: s.includeTag,
      filter: s.filter?.spec,
      hook: s.cfg.packObjectsHook,
      env: s.opts.env ?? s.repo.env,
    });
    return await relayPack(child, w, {
      keepalive: s.cfg.keepalive,
      quietMs: s.opts.relayQuietMs,
      stderr: (b) => { try { process.stderr.write(b); } catch { /* ignore */ } },
    });
  } finally {
    release?.();
  }
}
