package procguard

import (
	"io"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
)

// Compile-time interface checks.
var (
	_ audit.Request       = (*policy.ExecRequest)(nil)
	_ policy.ExecResolver = (*resolver)(nil)
	_ Runner              = guarded{}
	_ io.Writer           = (*capWriter)(nil)
	_ io.WriteCloser      = (*closeOnce)(nil)
)
