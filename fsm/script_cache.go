package fsm

import (
	"bytes"
	"container/list"
	"strings"
)

// scriptCache is the replicated script cache, with Redis 7.4's rules:
//
//   - a script loaded by SCRIPT LOAD stays until SCRIPT FLUSH; at most
//     Config.MaxLoadedScripts of them, past which SCRIPT LOAD is refused
//     (a load promises the script will be there, which an evicting cache
//     could not keep);
//   - a script that EVAL ran is cached too, so a later EVALSHA finds it,
//     but only the Config.MaxEvalScripts most recently used of those are
//     kept: the least recently used is evicted, so EVAL traffic (a client
//     that formats a value into the text) can never fill the cache;
//   - SCRIPT LOAD of a script EVAL cached promotes it: it is not evicted
//     any more;
//   - EVAL and EVALSHA of an EVAL-cached script make it the most recently
//     used; they never move a loaded one.
//
// "Recently" is in apply order, never wall time, and the order is part of
// the snapshot, so every node evicts the same script at the same index.
type scriptCache struct {
	loaded      map[string][]byte        // sha1 hex → text
	evals       map[string]*list.Element // sha1 hex → element of lru
	lru         *list.List               // *evalScript, front = least recently used
	loadedBytes int                      // texts in loaded (Stats)
	evalBytes   int                      // texts in evals (Stats)
}

type evalScript struct {
	sha  string
	text []byte
}

func (c *scriptCache) init() {
	c.loaded = map[string][]byte{}
	c.evals = map[string]*list.Element{}
	c.lru = list.New()
	c.loadedBytes, c.evalBytes = 0, 0
}

// get returns the text of sha (lower-case hex) without touching the
// order: reads (SCRIPT EXISTS, the bridge) must not change state.
func (c *scriptCache) get(sha string) ([]byte, bool) {
	if s, ok := c.loaded[sha]; ok {
		return s, true
	}
	if el, ok := c.evals[sha]; ok {
		return el.Value.(*evalScript).text, true
	}
	return nil, false
}

// use looks sha up for a run: an EVAL-cached script becomes the most
// recently used.
func (c *scriptCache) use(sha string) ([]byte, bool) {
	if s, ok := c.loaded[sha]; ok {
		return s, true
	}
	if el, ok := c.evals[sha]; ok {
		c.lru.MoveToBack(el)
		return el.Value.(*evalScript).text, true
	}
	return nil, false
}

// addEval caches a script EVAL ran (or marks it used), evicting the least
// recently used EVAL-cached scripts past max.
func (c *scriptCache) addEval(sha string, script []byte, max int) {
	if _, ok := c.use(sha); ok {
		return
	}
	c.evals[sha] = c.lru.PushBack(&evalScript{sha: sha, text: bytes.Clone(script)})
	c.evalBytes += len(script)
	for c.lru.Len() > max {
		c.removeEval(c.lru.Front())
	}
}

func (c *scriptCache) removeEval(el *list.Element) *evalScript {
	es := c.lru.Remove(el).(*evalScript)
	delete(c.evals, es.sha)
	c.evalBytes -= len(es.text)
	return es
}

// load keeps script until flush. ok is false, and nothing changes, when
// that would make more than max loaded scripts.
func (c *scriptCache) load(sha string, script []byte, max int) (ok bool) {
	if _, ok := c.loaded[sha]; ok {
		return true
	}
	if len(c.loaded) >= max {
		return false
	}
	if el, ok := c.evals[sha]; ok {
		script = c.removeEval(el).text // promoted: the text is already a copy
	} else {
		script = bytes.Clone(script)
	}
	c.loaded[sha] = script
	c.loadedBytes += len(script)
	return true
}

// flush is SCRIPT FLUSH: every script goes.
func (c *scriptCache) flush() { c.init() }

// The snapshot's script section (format 3): the loaded scripts sorted by
// SHA1, then the EVAL-cached ones from least to most recently used.
func (c *scriptCache) snapshot() (loaded, evals [][]byte) {
	for _, sha := range sortedKeys(c.loaded) {
		loaded = append(loaded, c.loaded[sha])
	}
	for el := c.lru.Front(); el != nil; el = el.Next() {
		evals = append(evals, el.Value.(*evalScript).text)
	}
	return loaded, evals
}

// restore replaces the cache with a snapshot's. The bounds are not
// applied: the snapshot holds what the cluster held at its index, and a
// node must hold exactly that to stay in step (a smaller bound only acts
// on the next SCRIPT LOAD or EVAL).
func (c *scriptCache) restore(loaded, evals [][]byte) {
	c.init()
	for _, s := range loaded {
		sha := ScriptSHA(s)
		if _, dup := c.loaded[sha]; !dup {
			c.loaded[sha] = s
			c.loadedBytes += len(s)
		}
	}
	for _, s := range evals {
		sha := ScriptSHA(s)
		if _, dup := c.get(sha); !dup {
			c.evals[sha] = c.lru.PushBack(&evalScript{sha: sha, text: s})
			c.evalBytes += len(s)
		}
	}
}

// ScriptStats describes the replicated script cache.
type ScriptStats struct {
	Loaded      int // scripts kept by SCRIPT LOAD
	LoadedBytes int // their texts' total length
	Eval        int // scripts kept by EVAL (least recently used evicted)
	EvalBytes   int
}

// ScriptStats reports the script cache's size.
func (t *scripts) ScriptStats() ScriptStats {
	c := &t.cache
	return ScriptStats{Loaded: len(c.loaded), LoadedBytes: c.loadedBytes, Eval: c.lru.Len(), EvalBytes: c.evalBytes}
}

// ScriptBySHA returns the cached script with that SHA1 (hex, any case).
// It changes nothing (the least-recently-used order moves only when a
// script runs).
func (t *scripts) ScriptBySHA(sha string) ([]byte, bool) {
	return t.cache.get(strings.ToLower(sha))
}

// ScriptSHAs reports, for each sha (hex, any case), whether the cache
// holds it (SCRIPT EXISTS).
func (t *scripts) ScriptSHAs(shas []string) []bool {
	out := make([]bool, len(shas))
	for i, s := range shas {
		_, out[i] = t.cache.get(strings.ToLower(s))
	}
	return out
}
