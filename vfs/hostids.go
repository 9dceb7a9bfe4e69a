package vfs

import "os"

// The ids wasmbox runs as on the host.
var hostUID, hostGID = uint32(os.Getuid()), uint32(os.Getgid())

// overflowID is what a host id that would pass for the sandbox user's
// shows as instead (the kernel's overflow id, "nobody").
const overflowID = 65534

// guestUID maps the owner of a host file into the sandbox: a mount
// belongs to the user who mounts it, so the files of the uid running
// wasmbox are the sandbox user's (UserUID), and every file is when
// wasmbox runs as root (it may do anything with them). Another user's
// file keeps its uid, unless that is UserUID: it is not the sandbox
// user's, so it shows as overflowID.
func guestUID(uid uint32) uint32 {
	switch {
	case hostUID == 0 || uid == hostUID:
		return UserUID
	case uid == UserUID:
		return overflowID
	}
	return uid
}

// guestGID is guestUID for groups: the group wasmbox runs as is the
// sandbox user's group (UserGID).
func guestGID(gid uint32) uint32 {
	switch {
	case hostUID == 0 || gid == hostGID:
		return UserGID
	case gid == UserGID:
		return overflowID
	}
	return gid
}
