package preview1

// WASI preview1 rights (witx "rights" flags).
const (
	rightFdDatasync uint64 = 1 << iota
	rightFdRead
	rightFdSeek
	rightFdFdstatSetFlags
	rightFdSync
	rightFdTell
	rightFdWrite
	rightFdAdvise
	rightFdAllocate
	rightPathCreateDirectory
	rightPathCreateFile
	rightPathLinkSource
	rightPathLinkTarget
	rightPathOpen
	rightFdReaddir
	rightPathReadlink
	rightPathRenameSource
	rightPathRenameTarget
	rightPathFilestatGet
	rightPathFilestatSetSize
	rightPathFilestatSetTimes
	rightFdFilestatGet
	rightFdFilestatSetSize
	rightFdFilestatSetTimes
	rightPathSymlink
	rightPathRemoveDirectory
	rightPathUnlinkFile
	rightPollFdReadwrite
	rightSockShutdown
	rightSockAccept
)

// fileRights are the rights that mean something on a regular file.
const fileRights = rightFdDatasync | rightFdRead | rightFdSeek | rightFdFdstatSetFlags |
	rightFdSync | rightFdTell | rightFdWrite | rightFdAdvise | rightFdAllocate |
	rightFdFilestatGet | rightFdFilestatSetSize | rightFdFilestatSetTimes | rightPollFdReadwrite

// dirRights are the rights that mean something on a directory.
const dirRights = rightFdDatasync | rightFdFdstatSetFlags | rightFdSync |
	rightPathCreateDirectory | rightPathCreateFile | rightPathLinkSource | rightPathLinkTarget |
	rightPathOpen | rightFdReaddir | rightPathReadlink | rightPathRenameSource |
	rightPathRenameTarget | rightPathFilestatGet | rightPathFilestatSetSize |
	rightPathFilestatSetTimes | rightFdFilestatGet | rightFdFilestatSetTimes |
	rightPathSymlink | rightPathRemoveDirectory | rightPathUnlinkFile

// filetype
const (
	filetypeUnknown      uint8 = 0
	filetypeBlockDevice  uint8 = 1
	filetypeCharDevice   uint8 = 2
	filetypeDirectory    uint8 = 3
	filetypeRegularFile  uint8 = 4
	filetypeSymbolicLink uint8 = 7
)

// fdflags
const (
	fdflagAppend   uint16 = 1
	fdflagDsync    uint16 = 2
	fdflagNonblock uint16 = 4
	fdflagRsync    uint16 = 8
	fdflagSync     uint16 = 16
)

// oflags
const (
	oflagCreat     uint16 = 1
	oflagDirectory uint16 = 2
	oflagExcl      uint16 = 4
	oflagTrunc     uint16 = 8
)

const lookupSymlinkFollow uint16 = 1

// fstflags
const (
	fstAtim    uint16 = 1
	fstAtimNow uint16 = 2
	fstMtim    uint16 = 4
	fstMtimNow uint16 = 8
)

// clock ids
const (
	clockRealtime  uint32 = 0
	clockMonotonic uint32 = 1
	clockProcess   uint32 = 2
	clockThread    uint32 = 3
)

// event types
const (
	eventClock   uint8 = 0
	eventFdRead  uint8 = 1
	eventFdWrite uint8 = 2
)

const (
	direntSize       = 24
	filestatSize     = 64
	fdstatSize       = 24
	subscriptionSize = 48
	eventSize        = 32
	iovecSize        = 8
)
