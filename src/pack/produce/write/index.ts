/** The native pack writer: a PackPlan in, a PackSource for relaySource() out. */
export { allowsPackReuse, listedCount, writePack, NativePackSource, type WritePackOptions, type WritePackStats } from './write-pack.js';
export type { DeltaSearch, DeltaSearchInput, SearchedDelta, WholeCandidate } from './delta-seam.js';
export { packCompressionLevel } from './deflater.js';
