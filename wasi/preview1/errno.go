package preview1

import (
	"errors"
	"fmt"
	"syscall"

	experimentalsys "github.com/wasmbox/wasmbox/third_party/wazero/experimental/sys"

	"github.com/wasmbox/wasmbox/vfs"
)

// Errno is a WASI preview1 error number, as a guest sees it (the "errno"
// enum of wasi_snapshot_preview1.witx). It implements error, so a test or
// a host wrapper can compare it with errors.Is.
type Errno uint16

// The WASI errno values this package returns (the full enum is 0..76).
const (
	ErrnoSuccess     Errno = 0
	Errno2big        Errno = 1
	ErrnoAcces       Errno = 2
	ErrnoAgain       Errno = 6
	ErrnoBadf        Errno = 8
	ErrnoBusy        Errno = 10
	ErrnoCanceled    Errno = 11
	ErrnoDquot       Errno = 19
	ErrnoExist       Errno = 20
	ErrnoFault       Errno = 21
	ErrnoFbig        Errno = 22
	ErrnoIntr        Errno = 27
	ErrnoInval       Errno = 28
	ErrnoIo          Errno = 29
	ErrnoIsdir       Errno = 31
	ErrnoLoop        Errno = 32
	ErrnoMfile       Errno = 33
	ErrnoMlink       Errno = 34
	ErrnoNametoolong Errno = 37
	ErrnoNfile       Errno = 41
	ErrnoNodev       Errno = 43
	ErrnoNoent       Errno = 44
	ErrnoNomem       Errno = 48
	ErrnoNospc       Errno = 51
	ErrnoNosys       Errno = 52
	ErrnoNotdir      Errno = 54
	ErrnoNotempty    Errno = 55
	ErrnoNotsock     Errno = 57
	ErrnoNotsup      Errno = 58
	ErrnoNotty       Errno = 59
	ErrnoNxio        Errno = 60
	ErrnoOverflow    Errno = 61
	ErrnoPerm        Errno = 63
	ErrnoPipe        Errno = 64
	ErrnoRange       Errno = 68
	ErrnoRofs        Errno = 69
	ErrnoSpipe       Errno = 70
	ErrnoTimedout    Errno = 73
	ErrnoTxtbsy      Errno = 74
	ErrnoXdev        Errno = 75
	ErrnoNotcapable  Errno = 76
)

var errnoNames = map[Errno]string{
	ErrnoSuccess: "ESUCCESS", Errno2big: "E2BIG", ErrnoAcces: "EACCES", ErrnoAgain: "EAGAIN",
	ErrnoBadf: "EBADF", ErrnoBusy: "EBUSY", ErrnoCanceled: "ECANCELED", ErrnoDquot: "EDQUOT",
	ErrnoExist: "EEXIST", ErrnoFault: "EFAULT", ErrnoFbig: "EFBIG", ErrnoIntr: "EINTR",
	ErrnoInval: "EINVAL", ErrnoIo: "EIO", ErrnoIsdir: "EISDIR", ErrnoLoop: "ELOOP",
	ErrnoMfile: "EMFILE", ErrnoMlink: "EMLINK", ErrnoNametoolong: "ENAMETOOLONG",
	ErrnoNfile: "ENFILE", ErrnoNodev: "ENODEV", ErrnoNoent: "ENOENT", ErrnoNomem: "ENOMEM",
	ErrnoNospc: "ENOSPC", ErrnoNosys: "ENOSYS", ErrnoNotdir: "ENOTDIR", ErrnoNotempty: "ENOTEMPTY",
	ErrnoNotsock: "ENOTSOCK", ErrnoNotsup: "ENOTSUP", ErrnoNotty: "ENOTTY", ErrnoNxio: "ENXIO",
	ErrnoOverflow: "EOVERFLOW", ErrnoPerm: "EPERM", ErrnoPipe: "EPIPE", ErrnoRange: "ERANGE",
	ErrnoRofs: "EROFS", ErrnoSpipe: "ESPIPE", ErrnoTimedout: "ETIMEDOUT", ErrnoTxtbsy: "ETXTBSY",
	ErrnoXdev: "EXDEV", ErrnoNotcapable: "ENOTCAPABLE",
}

// Error implements error with the POSIX name ("ENOSPC").
func (e Errno) Error() string {
	if n, ok := errnoNames[e]; ok {
		return n
	}
	return fmt.Sprintf("errno %d", uint16(e))
}

// syscallToWASI maps POSIX errnos (what vfs errors carry) to WASI errnos.
var syscallToWASI = map[syscall.Errno]Errno{
	syscall.E2BIG: Errno2big, syscall.EACCES: ErrnoAcces, syscall.EAGAIN: ErrnoAgain,
	syscall.EBADF: ErrnoBadf, syscall.EBUSY: ErrnoBusy, syscall.ECANCELED: ErrnoCanceled,
	syscall.EDQUOT: ErrnoDquot, syscall.EEXIST: ErrnoExist, syscall.EFAULT: ErrnoFault,
	syscall.EFBIG: ErrnoFbig, syscall.EINTR: ErrnoIntr, syscall.EINVAL: ErrnoInval,
	syscall.EIO: ErrnoIo, syscall.EISDIR: ErrnoIsdir, syscall.ELOOP: ErrnoLoop,
	syscall.EMFILE: ErrnoMfile, syscall.EMLINK: ErrnoMlink, syscall.ENAMETOOLONG: ErrnoNametoolong,
	syscall.ENFILE: ErrnoNfile, syscall.ENODEV: ErrnoNodev, syscall.ENOENT: ErrnoNoent,
	syscall.ENOMEM: ErrnoNomem, syscall.ENOSPC: ErrnoNospc, syscall.ENOSYS: ErrnoNosys,
	syscall.ENOTDIR: ErrnoNotdir, syscall.ENOTEMPTY: ErrnoNotempty, syscall.ENOTSOCK: ErrnoNotsock,
	syscall.ENOTSUP: ErrnoNotsup, syscall.ENOTTY: ErrnoNotty, syscall.ENXIO: ErrnoNxio,
	syscall.EOVERFLOW: ErrnoOverflow, syscall.EPERM: ErrnoPerm, syscall.EPIPE: ErrnoPipe,
	syscall.ERANGE: ErrnoRange, syscall.EROFS: ErrnoRofs, syscall.ESPIPE: ErrnoSpipe,
	syscall.ETIMEDOUT: ErrnoTimedout, syscall.ETXTBSY: ErrnoTxtbsy, syscall.EXDEV: ErrnoXdev,
}

// ErrnoOf returns the WASI errno a guest sees for err, an error of the vfs
// layer (*os.PathError or *os.LinkError wrapping a syscall.Errno, an io/fs
// sentinel, or an Errno). Unlike wazero's own mapping it keeps ENOSPC,
// EFBIG, EXDEV, EMLINK and EDQUOT, so a guest over a vfs quota reads "No
// space left on device". nil is ErrnoSuccess; an error it cannot classify
// is EIO.
func ErrnoOf(err error) Errno {
	if err == nil {
		return ErrnoSuccess
	}
	var e Errno
	if errors.As(err, &e) {
		return e
	}
	var xe experimentalsys.Errno
	if errors.As(err, &xe) {
		return fromSys(xe)
	}
	return fromSyscall(vfs.Errno(err))
}

func fromSyscall(se syscall.Errno) Errno {
	if se == 0 {
		return ErrnoSuccess
	}
	if se == syscall.EOPNOTSUPP {
		return ErrnoNotsup
	}
	if w, ok := syscallToWASI[se]; ok {
		return w
	}
	return ErrnoIo
}

// fromSys maps wazero's experimental/sys errnos (what the wasi adapter
// returns) to WASI errnos.
func fromSys(e experimentalsys.Errno) Errno {
	switch e {
	case 0:
		return ErrnoSuccess
	case experimentalsys.EACCES:
		return ErrnoAcces
	case experimentalsys.EAGAIN:
		return ErrnoAgain
	case experimentalsys.EBADF:
		return ErrnoBadf
	case experimentalsys.EEXIST:
		return ErrnoExist
	case experimentalsys.EFAULT:
		return ErrnoFault
	case experimentalsys.EINTR:
		return ErrnoIntr
	case experimentalsys.EINVAL:
		return ErrnoInval
	case experimentalsys.EIO:
		return ErrnoIo
	case experimentalsys.EISDIR:
		return ErrnoIsdir
	case experimentalsys.ELOOP:
		return ErrnoLoop
	case experimentalsys.ENAMETOOLONG:
		return ErrnoNametoolong
	case experimentalsys.ENOENT:
		return ErrnoNoent
	case experimentalsys.ENOSYS:
		return ErrnoNosys
	case experimentalsys.ENOTDIR:
		return ErrnoNotdir
	case experimentalsys.ERANGE:
		return ErrnoRange
	case experimentalsys.ENOTEMPTY:
		return ErrnoNotempty
	case experimentalsys.ENOTSOCK:
		return ErrnoNotsock
	case experimentalsys.ENOTSUP:
		return ErrnoNotsup
	case experimentalsys.EPERM:
		return ErrnoPerm
	case experimentalsys.EROFS:
		return ErrnoRofs
	}
	return ErrnoIo
}
