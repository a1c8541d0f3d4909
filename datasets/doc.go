// Package datasets knows the public data sets servesim's examples use and
// fetches them into a local cache.
//
// The manifest (manifest.toml, embedded) lists each data set: a name, its
// source pinned to a commit where the host allows it, its licence, and its
// files with URL, size and SHA-256. Each checksum says how it is known:
// "shared-copy" (computed from the byte-identical copy in ../shared/data),
// "lfs-pointer" (the Git LFS pointer's oid) or "unknown", in which case a
// fetch says the file is unverified rather than pretend.
//
// Fetcher.Fetch downloads a data set's files into Dir/NAME/PATH: each file
// goes to PATH.part first, resumes with an HTTP Range request when a partial
// file is there, is checked against its size and checksum, and is renamed
// into place only when it matches; a file that does not match is removed.
//
// Lookup turns a data set reference into a path, so that commands taking a
// data path accept either:
//
//	NAME          the data set's folder (or its only file)
//	NAME:ALIAS    one file by its short name, e.g. mooncake-fast25:conversation
//	NAME:PATH     a file or folder inside the data set, e.g. vidur-profiling:compute/h100
//
// searched first in the cache (Dir: $SERVESIM_DATA, else
// os.UserCacheDir()/servesim) and then in ../shared/data (and the same from
// one and two folders further up). A string that names an existing file, or
// does not start with a known data set name, is a plain path.
package datasets
