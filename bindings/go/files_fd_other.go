//go:build !unix

package opensandbox

import (
	"errors"
	"os"
)

// dupFile: descriptors are a Unix notion; elsewhere uploads copy the file in chunks.
func dupFile(*os.File) (int, error) {
	return -1, errors.New("descriptor uploads need a Unix platform")
}
