package policy

import (
	"fmt"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// publicSuffixError rejects a wildcard host rule whose suffix is a public
// suffix: "*.com" or "*.co.uk" would allow every registrant under it, and
// "*.github.io" or "*.s3.amazonaws.com" every user's site or bucket. The
// list is the Public Suffix List as vendored by golang.org/x/net/publicsuffix
// (both its ICANN and its private sections). A single label that the list
// does not name ("internal", "test", "local") falls under the list's default
// rule and is accepted: such names are private to a network.
func publicSuffixError(suffix string) error {
	ps, icann := publicsuffix.PublicSuffix(suffix)
	if ps != suffix || (!icann && !strings.Contains(ps, ".")) {
		return nil
	}
	section := "a public suffix"
	if !icann {
		section = "a public suffix (the list's private section: every name under it belongs to a different customer)"
	}
	return fmt.Errorf("%q covers every domain under %q, %s; did you mean one registrable domain, such as \"*.example.%s\", or the exact hosts you need?",
		"*."+suffix, suffix, section, suffix)
}
