package auth_test

import (
	"fmt"
	"strings"

	"github.com/locknode/locknode/auth"
)

func Example() {
	users, err := auth.Parse(strings.NewReader(`
user app on >app-secret ~app:* +@read +@write
user ops on >ops-secret ~* +@all
`))
	if err != nil {
		panic(err)
	}
	u, err := users.Authenticate("app", "app-secret")
	if err != nil {
		panic(err)
	}
	fmt.Println(u.Allowed(auth.Write, "app:jobs/nightly"))
	fmt.Println(u.Allowed(auth.Write, "billing:lock"))
	fmt.Println(u.Allowed(auth.Admin, "app:jobs/nightly"))
	_, err = users.Authenticate("app", "wrong")
	fmt.Println(err)
	// Output:
	// true
	// false
	// false
	// auth: invalid username-password pair or user is disabled
}
