// Package rediscmd is the catalogue of the Redis commands locknode
// serves: for each command its name, arity, flags, key positions (Redis 7
// key specifications), ACL categories, and the permission a locknode user
// needs to run it. The key space (package fsm) executes the commands
// flagged KeySpace and checks its own table against this one; the RESP
// bridge reads it for arity, admission, permissions, client tracking,
// cluster slots and the COMMAND family, so a command's facts are written
// once.
//
// The package is pure data and functions of it: it imports nothing of
// locknode's, and nothing in it changes after init.
//
// # Using the catalogue
//
//	s := rediscmd.LookupBytes(args[0])  // nil: not a command locknode serves
//	if s == nil || !s.ArityOK(len(args)) { /* refuse */ }
//	keys := s.KeyArgs(args)             // the arguments that are keys
//	first, last, step := s.KeyRange()   // COMMAND's legacy key positions
//
// Your responsibilities, as a front end:
//
//  1. Check ArityOK before anything else reads args: KeyArgs and ChannelArgs
//     never panic, but on a short argument list they return what fits.
//  2. Treat every *Spec as read-only; the catalogue hands out pointers to
//     its one copy.
//  3. A command the front end serves itself must have an entry here (its
//     tests check it), so COMMAND, permissions and cluster slots see it.
package rediscmd
