package vllmsim

import "encoding/json"

// The response bodies, with fields in the order vLLM's pydantic models
// declare them (vllm/entrypoints/openai/protocol.py), so that the JSON
// reads the same byte for byte in its structure.

// responseHeader opens every completion and chat body, stream chunks
// included.
type responseHeader struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
}

type usageInfo struct {
	PromptTokens        int            `json:"prompt_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	PromptTokensDetails *promptDetails `json:"prompt_tokens_details,omitempty"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// completionStreamChoice is CompletionResponseStreamChoice (dumped with
// its nulls, as vLLM streams completions with exclude_unset=False).
type completionStreamChoice struct {
	completionText
	TokenIDs []int `json:"token_ids,omitempty"` // return_token_ids: this chunk's tokens
}

// completionText is what a completion choice holds, streamed or not.
type completionText struct {
	Index        int     `json:"index"`
	Text         string  `json:"text"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
	StopReason   any     `json:"stop_reason"`
}

type completionStreamResponse struct {
	responseHeader
	Choices        []completionStreamChoice `json:"choices"`
	Usage          *usageInfo               `json:"usage"`
	PromptTokenIDs []int                    `json:"prompt_token_ids,omitempty"` // return_token_ids: first chunk only
}

type completionChoice struct {
	completionText
	PromptLogprobs any `json:"prompt_logprobs"`
}

type completionResponse struct {
	responseHeader
	Choices          []completionChoice `json:"choices"`
	Usage            usageInfo          `json:"usage"`
	KVTransferParams map[string]any     `json:"kv_transfer_params"`
}

// deltaMessage and the chat chunk types are dumped with
// exclude_unset=True in vLLM: unset fields are absent.
type deltaMessage struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chatStreamChoice struct {
	Index        int             `json:"index"`
	Delta        deltaMessage    `json:"delta"`
	Logprobs     any             `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason,omitempty"` // "null" on the last chunk
	TokenIDs     []int           `json:"token_ids,omitempty"`   // return_token_ids: this chunk's tokens
}

type chatStreamResponse struct {
	responseHeader
	Choices        []chatStreamChoice `json:"choices"`
	Usage          *usageInfo         `json:"usage,omitempty"`
	PromptTokenIDs []int              `json:"prompt_token_ids,omitempty"` // return_token_ids: first chunk only
}

type chatMessageOut struct {
	Role             string `json:"role"`
	ReasoningContent any    `json:"reasoning_content"`
	Content          string `json:"content"`
	ToolCalls        []any  `json:"tool_calls"`
}

type chatChoice struct {
	Index        int            `json:"index"`
	Message      chatMessageOut `json:"message"`
	Logprobs     any            `json:"logprobs"`
	FinishReason *string        `json:"finish_reason"`
	StopReason   any            `json:"stop_reason"`
}

type chatResponse struct {
	responseHeader
	Choices          []chatChoice   `json:"choices"`
	Usage            usageInfo      `json:"usage"`
	PromptLogprobs   any            `json:"prompt_logprobs"`
	KVTransferParams map[string]any `json:"kv_transfer_params"`
}

// errorResponse is vLLM's ErrorResponse.
type errorResponse struct {
	Error errorInfo `json:"error"`
}

type errorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}
