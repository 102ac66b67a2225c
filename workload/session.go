package workload

import "strconv"

// sessions resolves the session, parent and turn of requests as they come
// out in timestamp order.
type sessions struct {
	byKey    map[string]int     // session_id -> dense session
	byNum    blockIndex         // integer session_id -> dense session
	chats    map[string]chatRef // chat_id -> the request (Alibaba)
	latest   []chatRef          // dense session -> its latest request (index -1: none yet)
	count    int
	known    bool
	dangling int
}

type chatRef struct {
	index, session, turn int
	time                 float64
}

func newSessions() sessions {
	return sessions{byKey: map[string]int{}, chats: map[string]chatRef{}}
}

// resolve turns line l, the index-th request out, into a Request.
//
// With a session_id the session is that id and the parent is the
// session's previous request unless parent_chat_id names another. With
// parent_chat_id only (Alibaba) the session is the parent's, rebuilt
// along the chain; a parent never seen starts a session (dangling). With
// neither, every request is a session of its own.
func (s *sessions) resolve(l *line, index, blockTokens int) *Request {
	r := &Request{
		Index: index, Line: l.num, ID: l.id, Parent: -1, Time: l.time, Think: nan,
		Input: l.input, Output: l.output, Type: l.typ, Hashes: l.hashes, BlockTokens: blockTokens,
	}
	if r.ID == "" {
		r.ID = strconv.Itoa(l.num)
	}
	var parent chatRef
	hasParent := false
	hasSession := l.session != "" || l.numbered
	if l.format == Alibaba || hasSession {
		s.known = true
		r.Sessioned = true
	}
	if l.parent != "" {
		parent, hasParent = s.chats[l.parent]
		if !hasParent {
			s.dangling++
		}
	}
	switch {
	case hasSession:
		r.Session = s.sessionOf(l)
		if prev, ok := s.latestOf(r.Session); ok && !hasParent {
			parent, hasParent = prev, true
		}
	case hasParent:
		r.Session = parent.session
	default:
		r.Session = s.newSession()
	}
	r.Turn = 1
	if hasParent {
		r.Parent, r.Think, r.Turn = parent.index, l.time-parent.time, parent.turn+1
	}
	if l.turn > 0 {
		r.Turn = l.turn
	}
	ref := chatRef{index: index, session: r.Session, turn: r.Turn, time: l.time}
	if l.id != "" {
		s.chats[l.id] = ref
	}
	if hasSession {
		for len(s.latest) <= r.Session {
			s.latest = append(s.latest, chatRef{index: -1})
		}
		s.latest[r.Session] = ref
	}
	return r
}

// sessionOf returns the dense session of l's session_id, giving a new
// id the next one.
func (s *sessions) sessionOf(l *line) int {
	if l.numbered {
		if id, ok := s.byNum.get(uint64(l.sessionNum)); ok {
			return int(id)
		}
		id := s.newSession()
		s.byNum.put(uint64(l.sessionNum), int32(id))
		return id
	}
	id, ok := s.byKey[l.session]
	if !ok {
		id = s.newSession()
		s.byKey[l.session] = id
	}
	return id
}

func (s *sessions) newSession() int {
	s.count++
	return s.count - 1
}

// latestOf returns the latest request of session id, if it has one.
func (s *sessions) latestOf(id int) (chatRef, bool) {
	if id >= len(s.latest) || s.latest[id].index < 0 {
		return chatRef{}, false
	}
	return s.latest[id], true
}
