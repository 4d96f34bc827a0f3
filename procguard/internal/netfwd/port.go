package netfwd

import "strconv"

// Port is one forwarded TCP port: inside the namespace Serve listens on
// 127.0.0.1:Port (and [::1]:Port), and the host is asked to dial
// 127.0.0.1:Port.
type Port struct{ Port uint16 }

func (p Port) String() string { return strconv.Itoa(int(p.Port)) }

// hostAddr is the only address a request for p can make Host dial.
func (p Port) hostAddr() string { return "127.0.0.1:" + p.String() }
