package luaengine

import "github.com/locknode/locknode/internal/lua/ast"

// rewriteFors wraps the init, limit and step expressions of every numeric
// for statement in a call to the luaForNum helper, which converts numeric
// strings to numbers as Lua 5.1's OP_FORPREP does (gopher-lua raises "for
// statement init must be a number" instead). Redisson's batched read-lock
// watchdog depends on it: `for c = counter, 1, -1` with a string counter.
func rewriteFors(stmts []ast.Stmt) {
	for _, s := range stmts {
		rewriteStmt(s)
	}
}

func wrapForNum(e ast.Expr) ast.Expr {
	if e == nil {
		return nil
	}
	if _, ok := e.(*ast.NumberExpr); ok {
		return e // already a number: no call needed
	}
	call := &ast.FuncCallExpr{Func: &ast.IdentExpr{Value: luaForNum}, Args: []ast.Expr{e}}
	call.SetLine(e.Line())
	call.SetLastLine(e.LastLine())
	call.Func.SetLine(e.Line())
	call.Func.SetLastLine(e.LastLine())
	return call
}

func rewriteStmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.NumberForStmt:
		rewriteExpr(s.Init)
		rewriteExpr(s.Limit)
		rewriteExpr(s.Step)
		s.Init, s.Limit, s.Step = wrapForNum(s.Init), wrapForNum(s.Limit), wrapForNum(s.Step)
		rewriteFors(s.Stmts)
	case *ast.AssignStmt:
		rewriteExprs(s.Lhs)
		rewriteExprs(s.Rhs)
	case *ast.LocalAssignStmt:
		rewriteExprs(s.Exprs)
	case *ast.FuncCallStmt:
		rewriteExpr(s.Expr)
	case *ast.DoBlockStmt:
		rewriteFors(s.Stmts)
	case *ast.WhileStmt:
		rewriteExpr(s.Condition)
		rewriteFors(s.Stmts)
	case *ast.RepeatStmt:
		rewriteExpr(s.Condition)
		rewriteFors(s.Stmts)
	case *ast.IfStmt:
		rewriteExpr(s.Condition)
		rewriteFors(s.Then)
		rewriteFors(s.Else)
	case *ast.GenericForStmt:
		rewriteExprs(s.Exprs)
		rewriteFors(s.Stmts)
	case *ast.FuncDefStmt:
		if s.Name != nil {
			rewriteExpr(s.Name.Func)
			rewriteExpr(s.Name.Receiver)
		}
		if s.Func != nil {
			rewriteFors(s.Func.Stmts)
		}
	case *ast.ReturnStmt:
		rewriteExprs(s.Exprs)
	}
}

func rewriteExprs(es []ast.Expr) {
	for _, e := range es {
		rewriteExpr(e)
	}
}

// rewriteExpr descends into expressions only to reach function bodies.
func rewriteExpr(e ast.Expr) {
	switch e := e.(type) {
	case *ast.FunctionExpr:
		rewriteFors(e.Stmts)
	case *ast.AttrGetExpr:
		rewriteExpr(e.Object)
		rewriteExpr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			rewriteExpr(f.Key)
			rewriteExpr(f.Value)
		}
	case *ast.FuncCallExpr:
		rewriteExpr(e.Func)
		rewriteExpr(e.Receiver)
		rewriteExprs(e.Args)
	case *ast.LogicalOpExpr:
		rewriteExpr(e.Lhs)
		rewriteExpr(e.Rhs)
	case *ast.RelationalOpExpr:
		rewriteExpr(e.Lhs)
		rewriteExpr(e.Rhs)
	case *ast.StringConcatOpExpr:
		rewriteExpr(e.Lhs)
		rewriteExpr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		rewriteExpr(e.Lhs)
		rewriteExpr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		rewriteExpr(e.Expr)
	case *ast.UnaryNotOpExpr:
		rewriteExpr(e.Expr)
	case *ast.UnaryLenOpExpr:
		rewriteExpr(e.Expr)
	}
}
