// Command reach runs capslock over Go packages and fails when one of them
// reaches files, programs or the network other than through auditguard's
// facades (fsguard, procguard, netguard, isolate), which the capability
// map passed with -map marks safe. See docs/reach.md.
//
// Usage:
//
//	reach -capslock PATH -map tools/reach.cm [-deny FILES,EXEC,NETWORK] PACKAGES...
//	reach ... -expect FILES,EXEC,NETWORK PACKAGES...   (the check's self-test)
//
// Exit status: 0 when no denied capability is reached (with -expect: when
// every expected one is), 1 otherwise, 2 when capslock itself failed.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// report is the part of capslock's JSON output (-output json) read here.
type report struct {
	CapabilityInfo []struct {
		PackageDir     string `json:"packageDir"`
		CapabilityName string `json:"capabilityName"`
		CapabilityType string `json:"capabilityType"`
		Path           []struct {
			Name string `json:"name"`
			Site *struct {
				Filename string `json:"filename"`
				Line     string `json:"line"`
			} `json:"site"`
		} `json:"path"`
	} `json:"capabilityInfo"`
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reach", flag.ContinueOnError)
	fs.SetOutput(stderr)
	capslock := fs.String("capslock", "capslock", "the capslock `binary`")
	cm := fs.String("map", "tools/reach.cm", "the capability map `file` marking the facades safe")
	deny := fs.String("deny", "FILES,EXEC,NETWORK", "capabilities a package may not reach")
	expect := fs.String("expect", "", "self-test: capabilities the packages must reach (the check must see them)")
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: reach -capslock PATH -map FILE [-deny CAPS | -expect CAPS] PACKAGES...")
		return 2
	}
	cmd := exec.Command(*capslock, "-packages", strings.Join(fs.Args(), ","), "-capability_map", *cm, "-output", "json")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(stderr, "reach: capslock: %v\n%s", err, errb.String())
		return 2
	}
	var r report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		fmt.Fprintf(stderr, "reach: capslock output: %v\n", err)
		return 2
	}
	watch := strings.Split(*deny, ",")
	if *expect != "" {
		watch = strings.Split(*expect, ",")
	}
	found := map[string]bool{}
	for _, c := range r.CapabilityInfo {
		if !slices.Contains(watch, c.CapabilityName) {
			continue
		}
		found[c.CapabilityName] = true
		var hops []string
		for _, p := range c.Path {
			h := p.Name
			if p.Site != nil {
				h += " (" + p.Site.Filename + ":" + p.Site.Line + ")"
			}
			hops = append(hops, h)
		}
		fmt.Fprintf(stdout, "%s %s: %s\n", c.CapabilityName, strings.ToLower(strings.TrimPrefix(c.CapabilityType, "CAPABILITY_TYPE_")), strings.Join(hops, " -> "))
	}
	if *expect != "" {
		var missing []string
		for _, w := range watch {
			if !found[w] {
				missing = append(missing, w)
			}
		}
		if len(missing) > 0 {
			fmt.Fprintf(stderr, "reach: self-test failed: %s not seen in %s\n", strings.Join(missing, ", "), strings.Join(fs.Args(), " "))
			return 1
		}
		fmt.Fprintf(stdout, "reach: self-test ok: %s seen in %s\n", *expect, strings.Join(fs.Args(), " "))
		return 0
	}
	if len(found) > 0 {
		fmt.Fprintf(stderr, "reach: %s reach %s other than through fsguard, procguard, netguard or isolate\n",
			strings.Join(fs.Args(), " "), strings.Join(sortedKeys(found), ", "))
		return 1
	}
	fmt.Fprintf(stdout, "reach: %s reach no %s except through the facades\n", strings.Join(fs.Args(), " "), *deny)
	return 0
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
