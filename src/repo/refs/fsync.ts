/**
 * Whether ref writes are flushed to disk (git's
 * fsync_component(FSYNC_COMPONENT_REFERENCE)): `core.fsync` names the
 * components git fsyncs, and its default leaves references out, so git
 * writes tables, `tables.list` and loose refs without an fsync unless
 * `core.fsync` asks for `reference` (or `committed`, `added`, `all`).
 * GIT_TEST_FSYNC=false turns every fsync off, as in git.
 */
import { parseBool, type Config } from '../config.js';

const LOOSE = 1, PACK = 2, PACK_META = 4, GRAPH = 8, INDEX = 16, REFERENCE = 32;
const OBJECTS = LOOSE | PACK;
const DERIVED = PACK_META | GRAPH;
const COMMITTED = OBJECTS | REFERENCE;
const NAMES: Array<[string, number]> = [
  ['loose-object', LOOSE], ['pack', PACK], ['pack-metadata', PACK_META], ['commit-graph', GRAPH], ['index', INDEX],
  ['objects', OBJECTS], ['reference', REFERENCE], ['derived-metadata', DERIVED], ['committed', COMMITTED],
  ['added', COMMITTED | INDEX], ['all', OBJECTS | DERIVED | INDEX | REFERENCE],
];
const DEFAULT = (OBJECTS | DERIVED) & ~LOOSE;

/** parse_fsync_components(): a comma-separated list, `none` clearing, `-x` removing; a name matches the components it begins. */
function components(value: string): number {
  let current = DEFAULT, positive = 0, negative = 0;
  for (const raw of value.split(',')) {
    let tok = raw.replace(/^[ \t\n\r]+/, '');
    if (!tok.length) continue; // (git skips every separator between names)
    if (tok === 'none') { current = 0; continue; }
    let negated = false;
    if (tok.startsWith('-')) { negated = true; tok = tok.slice(1); }
    if (!tok.length) break;
    for (const [name, bits] of NAMES) {
      if (!name.startsWith(tok)) continue;
      if (negated) negative |= bits; else positive |= bits;
    }
  }
  return (current & ~negative) | positive;
}

export function fsyncRefs(config: Config | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  const t = env.GIT_TEST_FSYNC;
  if (t !== undefined && t !== '') {
    try { if (!parseBool(t)) return false; } catch { /* not a boolean: git dies; fsync as by default */ }
  }
  const v = config?.get('core.fsync');
  return typeof v === 'string' ? (components(v) & REFERENCE) !== 0 : false;
}
