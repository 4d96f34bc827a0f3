package fsguard

import "golang.org/x/sys/unix"

// sysFstatatNr is the fstatat x/sys/unix calls on linux/arm64.
const sysFstatatNr = unix.SYS_FSTATAT
