// Package toolset is a guarded tool set for an LLM agent: read, write,
// edit, glob, grep, list and fetch (and bash, a guarded shell session, when
// the host asks for one), each a plain Go method on a Set with a typed
// input (Set.Read, Set.Edit, ...) and a Tool a model is told about: a
// name, a description, a JSON Schema of its input, and Call, which takes
// the model's JSON. Adapters (the MCP server in the mcp module, framework
// adapters under adapters/) wrap Tools; they add no behaviour.
//
// A host enters its guard and makes the Set from the scope's context:
//
//	ctx, release, _ := g.Enter(context.Background())
//	defer release()
//	set, _ := toolset.New(ctx, toolset.Options{Workspace: ws})
//	res, err := set.Call(toolset.WithCallID(ctx, "toolu_01"), "edit", input)
//
// # What each call guarantees
//
//   - Every file, network and process call a tool makes goes through the
//     guard (fsguard, netguard, procguard) and is decided before it acts.
//     The tools add no rule of their own and grant nothing: the workspace
//     is where relative paths start, not a boundary. What the policy
//     allows, the tools may do; what it denies, they cannot.
//   - Every call runs in a guard scope nested in the Set's, released when
//     the call returns (the files and connections the call opened are
//     closed, the children it started killed), under an audit.Call whose
//     Name is "tool#id" and whose Args is an *Invocation (tool, id,
//     typed input). Every record the call's decisions make therefore names
//     the call (audit.Record.Tool); callbacks find the tool with
//     InvocationOf(ev.Call). A TrustSite verdict lasts for one call.
//   - A failed call returns an *Error whose message is for the model:
//     which argument is missing or has the wrong type, that a path does
//     not exist, that an edit's old text is absent or occurs more than
//     once (with the lines), that a file is binary, that a body is over the
//     cap. A denial's message is the audit.DenyError's teaching text (what
//     was blocked, by which rule, how to allow it) and errors.As finds the
//     DenyError. Kind says which of these it is. Such a call changes
//     nothing: bad input is refused before anything is written, a write is
//     decided before its directories are made, an edit is decided at the
//     open, before the file is truncated.
//   - A tool that panics returns a KindPanic *Error; the stack goes to
//     Options.Logger, never to the model, and the host goes on.
//   - grep reads every file through the guard: a file the policy forbids
//     reading is skipped and named in the result, and none of its contents
//     is printed. glob and list name such entries without reading them
//     (list marks them "read denied by policy").
//   - Results are capped (Options.MaxOutput, read's line limit, grep's
//     max_results, fetch's byte cap, the shell's per-stream cap) and say
//     where they were cut.
//   - bash (Options.Shell) is one Run of one shellguard.Session the Set
//     keeps: state carries over between calls, every program is decided
//     with its expanded argv, each call is killed with everything it
//     started at its timeout (timeout_seconds may shorten it), and the
//     result gives the exit code, the working directory after the call
//     and both streams. A refused program is not a tool error: the script
//     goes on, the program's status is 126 and the teaching text is on
//     stderr. shellguard's documentation says what differs from bash.
//
// # Not guaranteed
//
//   - write and edit are not atomic: a reader may see a file half written,
//     and an edit made by someone else between edit's read and its write
//     is lost. An edit's write, once allowed, truncates then writes.
//   - A panicking tool is not rolled back.
//   - bash's session decides every call in the Set's scope: a narrower
//     scope on the caller's context (audit.Restrict) holds for the other
//     tools, not for bash.
//   - Text means UTF-8 without NUL bytes; other encodings are refused as
//     binary. fetch returns HTML as-is, markup included.
//   - The call's id is whatever the caller put on the context
//     (WithCallID); without one the Set numbers calls itself, so ids are
//     unique per Set, not across processes.
package toolset
