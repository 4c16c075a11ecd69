package fence_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/locknode/locknode/fence"
)

// A resource server refuses writes from a superseded lock holder.
func ExampleMiddleware() {
	mw, err := fence.Middleware(fence.Config{}) // in-memory record, header Locknode-Fence
	if err != nil {
		panic(err)
	}
	srv := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := fence.FromContext(r.Context())
		fmt.Fprintf(w, "written with fence %d", tok)
	}))
	for _, tok := range []string{"7", "6"} {
		req := httptest.NewRequest(http.MethodPut, "/orders/42", nil)
		req.Header.Set(fence.DefaultHeader, tok)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		fmt.Println(rec.Code)
	}
	// Output:
	// 200
	// 409
}
