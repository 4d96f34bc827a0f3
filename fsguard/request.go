package fsguard

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/auditguard/auditguard/policy"
)

// Rules fsguard itself decides with. They are hard or invalid denials and
// go through the audit pipeline like every policy rule.
var (
	// RuleMultiLink denies writing to, changing the attributes of, or adding
	// a name to a regular file with more than one hard link: its other names
	// may live outside the write roots.
	RuleMultiLink = &policy.Rule{Kind: policy.KindSystem, Pattern: "files with more than one hard link are not modified", Source: "fsguard",
		Hint: "copy the file instead of writing through a shared hard link, or make the handle with fsguard.WithMultiLinkWrites"}
	// RuleResolve denies a call whose name could not be resolved safely
	// (a loop, a file used as a directory, an unreadable directory).
	RuleResolve = &policy.Rule{Kind: policy.KindResolve, Pattern: "names must resolve safely", Source: "fsguard",
		Hint: "fix the path; resolution errors always deny"}
	detailSymlinkTarget = "the symbolic link's target must lie inside a write root"
	detailMultiLink     = "the file has more than one hard link"
)

// pathReq asks about one resolved path.
type pathReq struct {
	op     policy.Op
	path   string
	cwd    string
	nlink  uint64 // link count of an existing regular file, 0 otherwise
	detail string // replaces the decision's detail on denial
}

func (r *pathReq) Decide(p *policy.Policy) policy.Decision {
	d := p.CheckPath(r.op, r.path, r.cwd)
	if !d.Allowed {
		if r.detail != "" && d.Detail == "" {
			d.Detail = r.detail
		}
		return d
	}
	if r.nlink > 1 {
		return policy.Deny(policy.TierHard, RuleMultiLink, detailMultiLink)
	}
	return d
}

// multiReq asks about several paths: the first denial wins.
type multiReq []pathReq

func (m multiReq) Decide(p *policy.Policy) policy.Decision {
	var d policy.Decision
	for i := range m {
		d = m[i].Decide(p)
		if !d.Allowed {
			return d
		}
	}
	return d
}

// pairReq asks about both names of a two-name operation.
type pairReq struct{ a, b pathReq }

func (r *pairReq) Decide(p *policy.Policy) policy.Decision {
	if d := r.a.Decide(p); !d.Allowed {
		return d
	}
	return r.b.Decide(p)
}

// failReq denies because resolution failed.
type failReq struct{ detail string }

func (r failReq) Decide(*policy.Policy) policy.Decision {
	return policy.Deny(policy.TierInvalid, RuleResolve, r.detail)
}

// resolveDetail is the short reason a resolution failed.
func resolveDetail(err error) string {
	var re *policy.ResolveError
	if errors.As(err, &re) {
		var errno syscall.Errno
		if errors.As(re.Err, &errno) {
			return errno.Error() + " at " + re.At
		}
		if re.At != "" {
			return re.Err.Error() + " at " + re.At
		}
		return re.Err.Error()
	}
	return err.Error()
}

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}
