package results

// ColServerCheck is the column of ServerCheckColumn.
const ColServerCheck = "server_check"

// Columns that several suites write with the same name, type, unit and
// meaning, declared once: a suite's column list names them instead of
// declaring them again.
var (
	// EndpointColumn: the server a row of probe, mb1, replay or knee asked.
	EndpointColumn = Text(ColEndpoint, "the server's base URL (credentials redacted)")
	// SimulatedColumn: whether that server was kvtier's simulator.
	SimulatedColumn = Bool(ColSimulated, "true when the server said it is kvtier sim")
	// RequestIDColumn: the request's id, as sent.
	RequestIDColumn = Text("request_id", "the X-Request-Id sent")
	// APIColumn: the OpenAI endpoint the request went to.
	APIColumn = Text("api", "completions | chat")
	// ServerVersionColumn: what the server's /version said.
	ServerVersionColumn = Text("server_version", `GET /version, "" unknown`)
	// ServerFamilyColumn: which server it was.
	ServerFamilyColumn = Text("server_family", "vllm | sglang | llamacpp | ollama | tgi | trtllm | openai (docs/servers.md)")
	// PromptFormColumn: how the prompt was sent.
	PromptFormColumn = Text("prompt_form", "token_ids | text | chat: the form the prompt went in")
	// PromptTokensColumn: the prompt's length as the server counted it.
	PromptTokensColumn = Int("prompt_tokens", "tokens", "the prompt's tokens as the server reported them (usage)")
	// CachedSourceColumn: where a row's cached_tokens came from.
	CachedSourceColumn = Text("cached_source", "where cached_tokens came from: usage.prompt_tokens_details.cached_tokens | timings.cache_n | server_log (--server-log: the server's log, Ollama with OLLAMA_DEBUG=1)")
	// ServerCheckColumn: figures the server reported that cannot be true.
	ServerCheckColumn = Text(ColServerCheck, `"impossible: " and why, where a figure the server reported cannot be true (cached tokens above the prompt, completion_tokens past max_tokens and its slack, a count no server holds): that figure is left out and verifies nothing; "" when none`)
	// TimingColumn: the clock a device sample (sweep, transfer) was timed by.
	TimingColumn = Text("timing", "events (CUDA events) | clock (the host clock)")
)
