/** Object enumeration without bitmaps (#37, part 2). */
export { walkPlan, type WalkOptions } from './walk.js';
export { includeTags, type TagSink } from './include-tag.js';
export { makeFilter, applyFilter, type ObjectFilter } from './filter.js';
export { PatternList } from './sparse-patterns.js';
export { wildmatch, WM_PATHNAME } from './wildmatch.js';
export { packNameHash, nameHashFold } from '../../name-hash.js';
export { ObjectTable } from './object-table.js';
