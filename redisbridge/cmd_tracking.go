package redisbridge

import (
	"strconv"
	"strings"
)

// CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO: parsing and
// replies, with Redis 7's checks in Redis' order and its texts (compat/
// diff_cases_test.go compares them byte for byte). The table they change
// is tracking.go's.

// trackOptions is CLIENT TRACKING's parsed arguments.
type trackOptions struct {
	on                           bool
	redirect                     int64
	bcast, optin, optout, noloop bool
	prefixes                     []string
}

// parse parses CLIENT TRACKING ON|OFF [options]; it returns the
// error reply's text, in Redis' order of checks.
func (t *connTracking) parse(args [][]byte) (o trackOptions, msg string) {
	c := t.c
	for j := 3; j < len(args); j++ {
		more := len(args) - 1 - j
		switch opt := strings.ToLower(string(args[j])); {
		case opt == "redirect" && more > 0:
			j++
			if o.redirect != 0 {
				return o, "ERR A client can only redirect to a single other client"
			}
			id, err := strconv.ParseInt(string(args[j]), 10, 64)
			if err != nil {
				return o, msgNotInt
			}
			c.s.trk.mu.Lock()
			_, ok := c.s.trk.conns[id]
			c.s.trk.mu.Unlock()
			if !ok {
				return o, "ERR The client ID you want redirect to does not exist"
			}
			o.redirect = id
		case opt == "bcast":
			o.bcast = true
		case opt == "optin":
			o.optin = true
		case opt == "optout":
			o.optout = true
		case opt == "noloop":
			o.noloop = true
		case opt == "prefix" && more > 0:
			j++
			o.prefixes = append(o.prefixes, string(args[j]))
		default:
			return o, msgSyntax
		}
	}
	switch strings.ToLower(string(args[2])) {
	case "on":
		o.on = true
	case "off":
		return o, ""
	default:
		return o, msgSyntax
	}
	cur := c.s.trk.state(c)
	switch {
	case !o.bcast && len(o.prefixes) > 0:
		return o, "ERR PREFIX option requires BCAST mode to be enabled"
	case cur.on && cur.bcast != o.bcast:
		return o, "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."
	case o.bcast && (o.optin || o.optout):
		return o, "ERR OPTIN and OPTOUT are not compatible with BCAST"
	case o.optin && o.optout:
		return o, "ERR You can't specify both OPTIN mode and OPTOUT mode"
	case (o.optin && cur.optout) || (o.optout && cur.optin):
		return o, "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."
	}
	if o.bcast {
		for i, p := range o.prefixes {
			for _, q := range cur.prefixes {
				if overlaps(q, p) {
					return o, "ERR Prefix '" + p + "' overlaps with an existing prefix '" + q + "'. Prefixes for a single client must not overlap."
				}
			}
			for _, q := range o.prefixes[i+1:] {
				if overlaps(p, q) {
					return o, "ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap."
				}
			}
		}
	}
	return o, ""
}

// overlaps is Redis' stringCheckPrefix: one is a prefix of the other.
func overlaps(a, b string) bool {
	n := min(len(a), len(b))
	return a[:n] == b[:n]
}

// clientTracking: CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p]...
// [BCAST] [OPTIN] [OPTOUT] [NOLOOP].
func clientTracking(c *conn, args [][]byte) {
	o, msg := c.track.parse(args)
	if msg != "" {
		c.w.WriteError(msg)
		return
	}
	if !o.on {
		c.s.trk.disable(c)
		c.track.caching = false
		c.w.WriteStatus("OK")
		return
	}
	if msg := c.s.trk.enable(c, o); msg != "" {
		c.w.WriteError(msg)
		return
	}
	c.out.start()
	if o.redirect != 0 {
		c.s.trk.mu.Lock()
		to := c.s.trk.conns[o.redirect]
		c.s.trk.mu.Unlock()
		if to != nil {
			to.out.start()
		}
	}
	c.w.WriteStatus("OK")
}

// clientCaching: CLIENT CACHING YES|NO.
func clientCaching(c *conn, args [][]byte) {
	st := c.s.trk.state(c)
	if !st.on {
		c.w.WriteError("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch strings.ToLower(string(args[2])) {
	case "yes":
		if !st.optin {
			c.w.WriteError("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
	case "no":
		if !st.optout {
			c.w.WriteError("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
	default:
		c.w.WriteError(msgSyntax)
		return
	}
	c.track.caching = true
	c.w.WriteStatus("OK")
}

// clientGetRedir: CLIENT GETREDIR: the redirect id, 0 without one, -1
// when tracking is off.
func clientGetRedir(c *conn) {
	st := c.s.trk.state(c)
	if !st.on {
		c.w.WriteInt(-1)
		return
	}
	c.w.WriteInt(st.redirect)
}

// clientTrackingInfo: CLIENT TRACKINGINFO, Redis' map of flags, redirect
// and prefixes.
func clientTrackingInfo(c *conn) {
	st := c.s.trk.state(c)
	flags := []string{"off"}
	if st.on {
		flags[0] = "on"
	}
	if st.bcast {
		flags = append(flags, "bcast")
	}
	if st.optin {
		flags = append(flags, "optin")
		if c.track.caching {
			flags = append(flags, "caching-yes")
		}
	}
	if st.optout {
		flags = append(flags, "optout")
		if c.track.caching {
			flags = append(flags, "caching-no")
		}
	}
	if st.noloop {
		flags = append(flags, "noloop")
	}
	if st.brokenRedir {
		flags = append(flags, "broken_redirect")
	}
	c.w.WriteMapLen(3)
	c.w.WriteBulkString("flags")
	c.w.WriteSetLen(len(flags))
	for _, f := range flags {
		c.w.WriteBulkString(f)
	}
	c.w.WriteBulkString("redirect")
	if st.on {
		c.w.WriteInt(st.redirect)
	} else {
		c.w.WriteInt(-1)
	}
	c.w.WriteBulkString("prefixes")
	c.w.WriteArrayLen(len(st.prefixes))
	for _, p := range st.prefixes {
		c.w.WriteBulkString(p)
	}
}
