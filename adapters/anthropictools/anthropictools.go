// Package anthropictools hands auditguard's guarded tool set (package
// toolset) to anthropic-sdk-go's tool runner: each toolset.Tool as an
// anthropic.BetaTool, for Client.Beta.Messages.NewToolRunner.
//
//	runner := client.Beta.Messages.NewToolRunner(anthropictools.Tools(set), params)
//
// Guaranteed: a tool keeps its name, description and input schema, and
// Execute runs toolset.Tool.Call, so everything package toolset
// guarantees holds (every call decided by the guard, its records naming
// the call, bad input refused before anything changes, panics turned
// into errors). A failed call returns the *toolset.Error, which the
// runner sends back to the model as an is_error tool result ("Error: "
// and the message: a denial's teaching text, or what was wrong with the
// input). A successful call is one text block.
//
// Not guaranteed: the runner does not give a tool the tool_use id it
// answers, so calls are numbered by the adapter ("1", "2", ... across the
// tools of one Tools call) unless the context already carries an id
// (toolset.WithCallID); the records say "edit#3", not "edit#toolu_...".
package anthropictools

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/auditguard/auditguard/toolset"
)

// Tool is a toolset.Tool as an anthropic.BetaTool.
type Tool struct {
	t      *toolset.Tool
	schema anthropic.BetaToolInputSchemaParam
	seq    *atomic.Uint64
}

var _ anthropic.BetaTool = (*Tool)(nil)

// Tools returns every tool of set as a BetaTool, in the set's order.
func Tools(set *toolset.Set) []anthropic.BetaTool {
	seq := new(atomic.Uint64)
	var out []anthropic.BetaTool
	for _, t := range set.Tools() {
		out = append(out, newTool(t, seq))
	}
	return out
}

func newTool(t *toolset.Tool, seq *atomic.Uint64) *Tool {
	var schema anthropic.BetaToolInputSchemaParam
	if err := schema.UnmarshalJSON(t.InputSchema); err != nil {
		// toolset's schemas are static JSON objects.
		panic(fmt.Sprintf("anthropictools: the %s tool's schema: %v", t.Name, err))
	}
	return &Tool{t: t, schema: schema, seq: seq}
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.t.Name }

// Description returns the tool's description.
func (t *Tool) Description() string { return t.t.Description }

// InputSchema returns the tool's input schema.
func (t *Tool) InputSchema() anthropic.BetaToolInputSchemaParam { return t.schema }

// Execute runs the tool with the model's JSON input: one text block, or
// the *toolset.Error for the model.
func (t *Tool) Execute(ctx context.Context, input json.RawMessage) ([]anthropic.BetaToolResultBlockParamContentUnion, error) {
	if toolset.CallIDFrom(ctx) == "" {
		ctx = toolset.WithCallID(ctx, strconv.FormatUint(t.seq.Add(1), 10))
	}
	res, err := t.t.Call(ctx, input)
	if err != nil {
		return nil, err
	}
	return []anthropic.BetaToolResultBlockParamContentUnion{{OfText: &anthropic.BetaTextBlockParam{Text: res.Text}}}, nil
}
