// Command install copies a file to one path or more, keeping it executable: an init
// container runs it to put a provider's binary into a volume the main container shares,
// since the images have no shell and no cp. A program that answers by the name it is run
// as (cloudcli) is installed under each of its names.
//
//	install SRC DST [DST...]
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: install SRC DST [DST...]")
		os.Exit(2)
	}
	for _, dst := range os.Args[2:] {
		if err := install(os.Args[1], dst); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func install(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755) //nolint:gosec // an executable
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
