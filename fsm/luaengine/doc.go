// Package luaengine is the Lua engine behind EVAL: gopher-lua (Lua 5.1,
// the fork in internal/lua) made deterministic, with Redis 7's libraries
// and error texts. It compiles scripts, runs them within a step and a
// memory budget, and converts replies both ways; it knows nothing of the
// key space, which it reaches through its Host (fsm's Table, whose
// redis.call runs a command as OpRedis does). Like fsm it is pure: no
// clocks, randomness, I/O, goroutines or map order in its output.
//
//   - Libraries: base (without dofile, loadfile, print, getfenv, setfenv,
//     module, require, newproxy; collectgarbage is a no-op), table, string,
//     math, and Redis' bit (bit.go), cjson (cjson.go), struct (struct.go)
//     and cmsgpack (cmsgpack.go), each charging its work to the step
//     budget and what it builds to the memory budget.
//     No os, io, debug, coroutine, package.
//   - math.random is Redis' rand48 generator reseeded with 0 at the start of
//     every script (as Redis 6 did; Redis 7.0 keeps the generator running
//     across scripts, which would be unreplicated state). math.randomseed
//     reseeds it for the rest of the script.
//   - tostring of a table or function names it by the order in which the
//     script first printed it ("table: 0x00000001"), not by its address.
//   - Globals are read-only as in Redis 7: assigning one raises "Attempt to
//     modify a readonly table", reading an undefined one raises "Script
//     attempted to access nonexistent global variable".
//   - Step budget: the VM checks its context once per instruction; our
//     context is not a clock but a counter (stepBudget), so a script that
//     runs more than Limits.MaxSteps instructions fails with the same
//     error on every node. Go library calls count as one step each, except
//     pattern matching (find, match, gmatch, gsub), which adds its own
//     steps to the same counter; string.rep is also capped at
//     Limits.MaxValueBytes.
//   - Memory budget: internal/lua charges every allocation a script
//     controls (strings it builds, tables and their growth, closures,
//     redis.call replies) to a per-run count, before allocating, and
//     raises an error past Limits.MaxMemory. The count depends only
//     on what the script asked for, so every node stops the script at the
//     same instruction with the same error.
//   - Neither limit can be caught: pcall may catch the error, but the VM
//     polls the budget before the next instruction and fails again, and
//     the reply is the limit's error whatever the script returned.
//   - The budgets are per log entry: the scripts of one EXEC share them.
//   - A script that fails (an uncaught error, a limit) must change
//     nothing: Run reports it failed, and its host undoes the writes the
//     script made before failing (fsm: script_undo.go). Redis keeps them.
//   - Lua 5.1 numeric-for conversion: `for i = "3", 1, -1` converts string
//     bounds to numbers; gopher-lua does not, so the compiler front end
//     wraps the three expressions of every numeric for in a conversion
//     call (rewriteFors).
//   - Isolation: interpreters (luaVM, vm.go) are reused from a small
//     node-local free list, so a script must not be able to leave anything
//     behind for the next one. Scripts see only read-only tables that
//     nothing can write: the globals (an always-empty view over the
//     libraries, KEYS and ARGV), the library tables string, table, math
//     and redis (views over tables the script cannot reach), and the
//     string metatable. rawset, setmetatable, table.insert/remove/sort
//     refuse them ("Attempt to modify a readonly table", as Redis 7);
//     setmetatable accepts only tables, so the metatables of strings,
//     numbers and the like cannot change. Everything else a script can
//     touch (tostring names, the random generator, RESP version, the step
//     budget, the VM stack) is reset before each run. The result of a
//     script therefore never depends on which interpreter ran it.
//   - Library tables are filled in sorted key order, so pairs() over them
//     is the same on every node (gopher-lua fills them from Go maps).
//   - string.format is Lua 5.1's (format.go): %s takes only strings and
//     numbers, as in Redis, so no address can reach a reply.
//   - Errors read as Redis 7's: a script is first checked against Lua
//     5.1's grammar (syntax.go), which gives compile errors Lua's words;
//     runtime errors carry Lua 5.1's texts with variable names
//     (internal/lua errnames.go) and Redis' "script: <sha>, on
//     @user_script:<line>." suffix (errors.go).
//
// Compiled prototypes are cached by SHA1 in a bounded LRU, which is
// node-local and not replicated.
package luaengine
