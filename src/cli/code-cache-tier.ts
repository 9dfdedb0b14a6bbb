/**
 * How far a run went, for bin/gitwire's V8 code cache: a cache holds the
 * functions its run compiled, so one written by an advertisement lacks
 * everything that makes a pack, and every fetch then parses them again.
 * 0: the command's start (any run); 1: a pack was sent. bin/gitwire keeps
 * one cache per tier and writes a higher tier's when a run reaches it.
 */
let tier = 0;

/** This run sent a pack. */
export function reachedPack(): void { tier = 1; }

/** The tier this run reached. */
export function codeCacheTier(): number { return tier; }
