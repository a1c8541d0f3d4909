package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/servesim/servesim/datasets"
)

const dataUsage = `Usage: servesim data list [--dir DIR] [-q] [NAME]
       servesim data fetch [--dir DIR] [-q] NAME...
       servesim data path REF

The public data sets the examples use (request traces, kernel profiles):
list shows them (with NAME: its files, URLs and checksums) and where each
is found; fetch downloads them into the cache, checking each file's size
and SHA-256 (a file the manifest has no checksum for is reported
"unverified"), resuming a partial download and placing each file only
when it is whole; path prints where a data reference resolves.

The cache is --dir, else $SERVESIM_DATA, else the user cache directory's
servesim folder. Commands that take a data path (run --trace, trace stats,
calibrate --trace, validate RUN) also take a reference: NAME (its folder, or its only
file), NAME:ALIAS (a file by its short name) or NAME:PATH, looked up in the
cache and then in ../shared/data.

-q prints only the result: list its table (no "Cache:" line), fetch
nothing but errors (no headers, no per-file log), path the path.

Examples:
  servesim data list
  servesim data list mooncake-fast25
  servesim data fetch azure-llm-2023 mooncake-fast25
  servesim run --trace mooncake-fast25:conversation --prefix-caching
  servesim trace stats azure-llm-2023:code azure-llm-2023:conv
  servesim calibrate --trace vidur-profiling --gpu h100 -o h100.toml
`

func dataCmd(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, dataUsage)
		if len(args) == 0 {
			return errors.New("data: name a subcommand (list, fetch, path)")
		}
		return nil
	}
	sub, rest := args[0], args[1:]
	fs := newFlagSet("data "+sub, dataUsage, stderr)
	dir := fs.String("dir", "", "the cache directory (default $"+datasets.EnvDir+", else the user cache directory's servesim folder)")
	quiet := fs.BoolP("quiet", "q", false, "print only the result: list its table, fetch nothing but errors")
	switch sub {
	case "list", "fetch", "path":
	default:
		return fmt.Errorf("data: unknown subcommand %q (known: list, fetch, path)", sub)
	}
	if err := parseFlags(fs, rest); err != nil {
		return err
	}
	if *dir == "" {
		d, err := datasets.Dir()
		if err != nil {
			return err
		}
		*dir = d
	} else if sub == "path" {
		return errors.New("data path: --dir does not apply (set $" + datasets.EnvDir + ")")
	}
	switch sub {
	case "list":
		return dataList(fs.Args(), *dir, stdout, *quiet)
	case "fetch":
		return dataFetch(fs.Args(), *dir, unlessQuiet(stdout, *quiet))
	}
	if fs.NArg() != 1 {
		return errors.New("data path: give one reference, e.g. mooncake-fast25:conversation")
	}
	p, ok, err := datasets.Lookup(fs.Arg(0))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("data path: %q is not a data set reference (known data sets: %s)", fs.Arg(0), strings.Join(datasets.Names(), ", "))
	}
	_, err = fmt.Fprintln(stdout, p)
	return err
}

func dataList(names []string, dir string, stdout io.Writer, quiet bool) error {
	if len(names) > 1 {
		return errors.New("data list: give at most one data set name")
	}
	if len(names) == 1 {
		d, err := datasets.Get(names[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %s\nSource: %s\nLicence: %s\nCache: %s\n\n", d.Name, d.Title, d.Source, d.License, filepath.Join(dir, d.Name))
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "FILE\tALIAS\tBYTES\tCHECKSUM\tURL")
		for _, f := range d.Files {
			size := "?"
			if f.Size > 0 {
				size = fmt.Sprint(f.Size)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Path, orDash(f.Alias), size, f.Checksum, f.URL)
		}
		return tw.Flush()
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tFILES\tSIZE\tUNVERIFIED\tFOUND\tWHAT")
	for _, d := range datasets.All() {
		size := sizeText(d, "?", "≥ ")
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\n", d.Name, len(d.Files), size, d.Unverified(), found(d, dir), d.Title)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(unlessQuiet(stdout, quiet), "\nCache: %s. `servesim data list NAME` shows a data set's files, licence and URLs.\n", dir)
	return err
}

// found says where a data set's folder is: the cache, ../shared/data, or neither.
func found(d datasets.Dataset, dir string) string {
	if st, err := os.Stat(filepath.Join(dir, d.Name)); err == nil && st.IsDir() {
		return "cache"
	}
	if sharedCopy(d) != "" {
		return "shared"
	}
	return "-"
}

// resolveData replaces *p, when it is a data set reference (NAME,
// NAME:ALIAS, NAME:PATH), by the path it resolves to; a plain path is left
// as it is.
func resolveData(p *string) error {
	r, _, err := datasets.Lookup(*p)
	*p = r
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func dataFetch(names []string, dir string, stdout io.Writer) error {
	if len(names) == 0 {
		return fmt.Errorf("data fetch: name a data set (known: %s)", strings.Join(datasets.Names(), ", "))
	}
	var sets []datasets.Dataset
	for _, n := range names {
		d, err := datasets.Get(n)
		if err != nil {
			return err
		}
		sets = append(sets, d)
	}
	ctx, stop := interruptible()
	defer stop()
	f := &datasets.Fetcher{Dir: dir, Log: stdout}
	var failed []string // a data set that fails does not stop the others
	for _, d := range sets {
		size := sizeText(d, "size unknown", "at least ")
		fmt.Fprintf(stdout, "%s: %s\nSource: %s\nLicence: %s\nFetching %d files (%s) into %s.\n",
			d.Name, d.Title, d.Source, d.License, len(d.Files), size, filepath.Join(dir, d.Name))
		res, err := f.Fetch(ctx, d)
		if ctx.Err() != nil {
			return err
		}
		if err != nil {
			fmt.Fprintf(stdout, "%s: %d of %d files fetched.\n", d.Name, len(res), len(d.Files))
			if where := sharedCopy(d); where != "" {
				fmt.Fprintf(stdout, "%s: a copy is already in %s (`servesim data list` finds it there, and commands read it from there without a fetch).\n", d.Name, where)
			}
			fmt.Fprintln(stdout)
			failed = append(failed, d.Name)
			continue
		}
		unverified := 0
		for _, r := range res {
			if !r.Verified {
				unverified++
			}
		}
		if unverified > 0 {
			fmt.Fprintf(stdout, "%s: done; %d of %d files unverified (no checksum in the manifest).\n\n", d.Name, unverified, len(res))
		} else {
			fmt.Fprintf(stdout, "%s: done; all %d files verified.\n\n", d.Name, len(res))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("data fetch: %d of %d data sets not fetched whole (%s): each failed file is listed above", len(failed), len(sets), strings.Join(failed, ", "))
	}
	return nil
}

// sharedCopy is the folder under ../shared/data holding a copy of d, or "".
func sharedCopy(d datasets.Dataset) string {
	if d.Shared == "" {
		return ""
	}
	for _, s := range datasets.SharedDirs {
		p := filepath.Join(s, filepath.FromSlash(d.Shared))
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// sizeText is d's size in MB, unknown when no file's size is known, and
// after atLeast when only some are.
func sizeText(d datasets.Dataset, unknown, atLeast string) string {
	b, complete := d.Size()
	size := fmt.Sprintf("%.1f MB", float64(b)/1e6)
	switch {
	case b == 0:
		return unknown
	case !complete:
		return atLeast + size
	}
	return size
}
