// Command paging is the design guide's advice on retrieving many entities
// ("Retrieve large numbers of entities from a query", with continuation
// tokens) done the way a web service needs it: an HTTP handler returns one
// page of a department's employees (patterns.Table.Page, one request) with
// an opaque, URL-safe token, and the client asks for the next page with
// that token, even from another process or after a restart. A token from
// another query, or a tampered one, is refused (tablekit.ErrInvalidToken),
// which the handler answers with 400.
//
// The server runs in-process with net/http/httptest; each page's line
// shows how many storage requests the server made for it.
//
// The program connects to AZURE_STORAGE_CONNECTION_STRING, or to
// Azurite's development storage when the variable is unset, so it runs on
// Azure unchanged.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/tablekit/tablekit"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns"
)

// Employee is the guide's employee entity.
type Employee struct {
	PartitionKey string // department
	RowKey       string // employee id
	FirstName    string
	LastName     string
}

// pageResponse is the handler's JSON answer.
type pageResponse struct {
	Employees []string `json:"employees"`
	Next      string   `json:"next,omitempty"`
}

// pageSize is the handler's page size ($top).
const pageSize = 10

func main() {
	if err := run(context.Background(), tablekit.ConnectionStringFromEnv(tablekit.DevelopmentConnectionString), "paging"); err != nil {
		log.Fatal(err)
	}
}

func plural(n int64) string {
	if n == 1 {
		return "1 request"
	}
	return fmt.Sprintf("%d requests", n)
}

// handler serves GET /employees?dept=D&page=TOKEN: one page of the
// department's employees in id order, and the token of the next.
func handler(employees *patterns.Table[Employee]) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /employees", func(w http.ResponseWriter, r *http.Request) {
		dept := r.URL.Query().Get("dept")
		if dept == "" {
			http.Error(w, "dept is required", http.StatusBadRequest)
			return
		}
		page, err := employees.Page(r.Context(), keys.PK().Eq(dept), r.URL.Query().Get("page"), &patterns.QueryOptions{Top: pageSize})
		switch {
		case errors.Is(err, tablekit.ErrInvalidToken):
			http.Error(w, "invalid page token", http.StatusBadRequest)
			return
		case err != nil:
			http.Error(w, "storage error", http.StatusBadGateway)
			log.Printf("page of %s: %v", dept, err)
			return
		}
		resp := pageResponse{Employees: []string{}, Next: page.Token}
		for _, e := range page.Items {
			resp.Employees = append(resp.Employees, e.RowKey+" "+e.FirstName+" "+e.LastName)
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(resp); err != nil {
			log.Printf("write page: %v", err)
		}
	})
	return mux
}

// get fetches one page from the server.
func get(ctx context.Context, base, dept, token string) (pageResponse, int, error) {
	u, err := url.Parse(base + "/employees")
	if err != nil {
		return pageResponse{}, 0, err
	}
	q := url.Values{"dept": {dept}}
	if token != "" {
		q.Set("page", token)
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return pageResponse{}, 0, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return pageResponse{}, 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return pageResponse{}, res.StatusCode, nil
	}
	var p pageResponse
	if err := json.NewDecoder(res.Body).Decode(&p); err != nil {
		return pageResponse{}, res.StatusCode, err
	}
	return p, res.StatusCode, nil
}

func run(ctx context.Context, connStr, tableName string) (err error) {
	requests := &tablekit.RequestCounter{}
	acct, err := tablekit.Connect(connStr, &tablekit.AccountOptions{
		ClientOptions: azcore.ClientOptions{PerRetryPolicies: []policy.Policy{requests}},
	})
	if err != nil {
		return err
	}
	employees, err := patterns.NewTable[Employee](acct, tableName, nil)
	if err != nil {
		return err
	}
	if err := employees.CreateIfNotExists(ctx, nil); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, employees.Drop(ctx, nil)) }()

	var staff []Employee
	for i := range 25 {
		staff = append(staff, Employee{PartitionKey: "Sales", RowKey: keys.PadInt(int64(100+i), 6), FirstName: "Emp", LastName: string(rune('A' + i))})
	}
	if _, err := employees.BulkWrite(ctx, staff, nil); err != nil {
		return err
	}
	requests.Take()
	fmt.Printf("wrote   %d Sales employees; the server hands out pages of %d\n", len(staff), pageSize)

	srv := httptest.NewServer(handler(employees))
	defer srv.Close()

	token, n := "", 0
	for {
		p, status, err := get(ctx, srv.URL, "Sales", token)
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("page %d: HTTP %d", n+1, status)
		}
		n++
		more := "last page"
		if p.Next != "" {
			more = "token for the next page"
		}
		fmt.Printf("page %d  %d employees, %s .. %s, %s: %s\n", n, len(p.Employees), first(p.Employees), last(p.Employees), more, plural(requests.Take()))
		if p.Next == "" {
			break
		}
		// The token is all a client keeps: the next request resumes from
		// it, as a browser following a "next" link would.
		token = p.Next
		if n == 1 {
			bad, status, err := get(ctx, srv.URL, "Sales", strings.ToUpper(p.Next))
			if err != nil {
				return err
			}
			if status == http.StatusOK {
				return fmt.Errorf("a tampered token was accepted: %v", bad)
			}
			fmt.Printf("        a tampered token -> HTTP %d: %s\n", status, plural(requests.Take()))
			otherDept, status, err := get(ctx, srv.URL, "Marketing", p.Next)
			if err != nil {
				return err
			}
			if status == http.StatusOK {
				return fmt.Errorf("a Sales token resumed a Marketing query: %v", otherDept)
			}
			fmt.Printf("        the token with dept=Marketing -> HTTP %d: %s\n", status, plural(requests.Take()))
		}
	}
	return nil
}

func first(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return s[0]
}

func last(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return s[len(s)-1]
}
