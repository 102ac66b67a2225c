package serving

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
)

// chatWords are the words chat prompts are drawn from: short, common
// English words that are one token in the usual BPE vocabularies.
var chatWords = strings.Fields(`time year people way day man thing woman life child world school
state family student group country problem hand part place case week company system program
question work government number night point home water room mother area money story fact month
lot right study book eye job word business issue side kind head house service friend father
power hour game line end member law car city community name president team minute idea kid
body information back parent face others level office door health person art war history party
result change morning reason research girl guy moment air teacher force education foot boy age
policy music market sense nation plan college interest death experience effect class control
care field development role effort rate heart drug show leader light voice wife police mind
price report decision son view relationship town road arm difference value building action
model season society tax director position player record paper space ground form event
official matter center couple site project activity star table need court oil situation cost
industry figure street image phone data picture practice piece land product doctor wall
patient worker news test movie north love support technology step baby computer type attention
film tree source organization hair window evidence population site`)

// chatOverhead is the tokens a chat template is assumed to add around a
// message whose length cannot be measured.
const chatOverhead = 8

// Prompter makes the prompts of a run: lists of token ids of an exact
// length for the completions API, or chat messages whose template-applied
// length the server's POST /tokenize confirms. Every prompt of a purpose
// is the same within a run and differs from every other run's (the
// nonce), and carries a cache_salt of its own.
type Prompter struct {
	Seed, Nonce uint64
	API         string  // APICompletions or APIChat
	Client      *Client // chat: the server that counts tokens
	Model       string
}

// A Prompt is one request's prompt and what is known of its length.
type Prompt struct {
	IDs  []int  // completions
	Text string // chat
	Salt string
	// Tokens is the prompt's length as the server counts it; Note says
	// when that is an estimate.
	Tokens int
	Note   string
}

// Request returns a request of the prompter's API for p.
func (pr *Prompter) Request(p Prompt, maxTokens int, id string) Request {
	return Request{API: pr.API, Model: pr.Model, Prompt: p.IDs, Text: p.Text, PromptTokens: p.Tokens, MaxTokens: maxTokens, Salt: p.Salt, RequestID: id}
}

// Make returns a prompt of l tokens for purpose. A chat prompt is sized
// with /tokenize when the server has it (a few calls), else by a
// calibration of the server (Client.Spell), else estimated;
// exact says whether its length must be confirmed (a measured request) or
// may be estimated (filler, decode streams).
func (pr *Prompter) Make(ctx context.Context, purpose string, l int, exact bool) (Prompt, error) {
	h := PurposeHash(purpose)
	salt := fmt.Sprintf("kvtier-%x-%x", pr.Nonce, h)
	if pr.API != APIChat {
		ids := TokenIDs(pr.Seed, h, l)
		copy(ids, TokenIDs(pr.Nonce, h, min(l, 4)))
		return Prompt{IDs: ids, Salt: salt, Tokens: l}, nil
	}
	words := chatText(pr.Seed, pr.Nonce, h)
	n := max(l-chatOverhead, 1)
	if !exact {
		return Prompt{Text: words(n), Salt: salt, Tokens: l, Note: "chat prompt length estimated"}, nil
	}
	for range 6 {
		text := words(n)
		got, err := pr.Client.Tokenize(ctx, pr.Model, text)
		if err != nil {
			return pr.spell(ctx, h, l, salt, err)
		}
		if got == l {
			return Prompt{Text: text, Salt: salt, Tokens: l}, nil
		}
		n = max(n+l-got, 1)
	}
	return Prompt{}, fmt.Errorf("no chat message of %d tokens: POST /tokenize never counted exactly that", l)
}

// spell makes a chat prompt of l tokens for a server without /tokenize
// (terr says why): spelled from token ids and sized by a calibration of
// the server's chat API (Client.Spell); estimated when that fails too.
func (pr *Prompter) spell(ctx context.Context, h uint64, l int, salt string, terr error) (Prompt, error) {
	ids := TokenIDs(pr.Seed, h, l)
	copy(ids, TokenIDs(pr.Nonce, h, min(l, 4)))
	text, err := pr.Client.Spell(ctx, pr.Model, APIChat, ids, l)
	if err != nil {
		return Prompt{Text: chatText(pr.Seed, pr.Nonce, h)(max(l-chatOverhead, 1)), Salt: salt, Tokens: l,
			Note: fmt.Sprintf("chat prompt length estimated (%s; %v)", OneLine(terr.Error()), err)}, nil
	}
	return Prompt{Text: text, Salt: salt, Tokens: l, Note: "chat prompt sized by calibration (no POST /tokenize)"}, nil
}

// chatText returns a function giving the first n words of purpose's text:
// the nonce first, then words drawn from chatWords.
func chatText(seed, nonce, h uint64) func(n int) string {
	return func(n int) string {
		rng := rand.New(rand.NewPCG(seed, h))
		ws := make([]string, n)
		ws[0] = fmt.Sprintf("kvtier%x", nonce^h)
		for i := 1; i < n; i++ {
			ws[i] = chatWords[rng.IntN(len(chatWords))]
		}
		return strings.Join(ws, " ")
	}
}
