/* strerror with GNU libc's texts (linked with -Wl,--wrap=strerror).

   wasi-libc's messages are musl's, which differ from glibc's for some
   errors ("Value too large for data type", "Symbolic link loop", ...).
   The sandbox's tools print glibc's, as Debian's programs do and as the
   golden cases (tools/testdata/golden) check. musl's strerror_r and
   perror call strerror, so the wrap covers them. Errors not listed have
   the same text in both. */
#include <errno.h>
#include <string.h>

char *__real_strerror(int);

char *__wrap_strerror(int e)
{
	switch (e) {
	case EOVERFLOW: return "Value too large for defined data type";
	case ELOOP: return "Too many levels of symbolic links";
	case ENAMETOOLONG: return "File name too long";
	case ENOMEM: return "Cannot allocate memory";
	case EIO: return "Input/output error";
	case ESPIPE: return "Illegal seek";
	case EXDEV: return "Invalid cross-device link";
	case ENOTSUP: return "Operation not supported";
	case EMFILE: return "Too many open files";
	case ENFILE: return "Too many open files in system";
	case ERANGE: return "Numerical result out of range";
	case EDOM: return "Numerical argument out of domain";
	case EILSEQ: return "Invalid or incomplete multibyte or wide character";
	case ENOTTY: return "Inappropriate ioctl for device";
	case EBUSY: return "Device or resource busy";
	case ECHILD: return "No child processes";
	case ETIMEDOUT: return "Connection timed out";
	}
	return __real_strerror(e);
}
