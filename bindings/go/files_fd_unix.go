//go:build unix

package opensandbox

import (
	"os"
	"syscall"
)

// dupFile returns a close-on-exec duplicate of f's descriptor (sharing its offset),
// obtained without f.Fd(), which would switch f to blocking mode for good.
func dupFile(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, err
	}
	nfd := -1
	var derr error
	if err := rc.Control(func(fd uintptr) {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_DUPFD_CLOEXEC, 0)
		if errno != 0 {
			derr = os.NewSyscallError("fcntl(F_DUPFD_CLOEXEC)", errno)
			return
		}
		nfd = int(r)
	}); err != nil {
		return -1, err
	}
	return nfd, derr
}
