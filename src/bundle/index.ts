/** Bundles gitwire makes of a repository and offers to cloning clients through bundle-uri (docs/serving.md). */
export { bundleHeader, parseBundleHeader, type BundleHeader, type BundleRef } from './header.js';
export { anonymousRefs, viewKey } from './refs.js';
export { makeBundle, type MadeBundle, type MakeBundleOptions } from './make.js';
export { BUNDLE_NAME, BUNDLE_SUBDIR, DEFAULT_GRACE_MS, bundleDir, currentBundle, listBundles, pruneBundles, servableBundle, type StoredBundle } from './store.js';
