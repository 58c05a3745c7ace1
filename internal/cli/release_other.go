//go:build !unix

package cli

import "os"

// holdReplaced holds nothing outside Unix: on Windows an open file cannot
// be renamed over.
func holdReplaced([]Output) []*os.File { return nil }
