package server

import (
	_ "embed"
	"net/http"
)

// openAPI is the API's OpenAPI 3 document, written by hand beside the
// routes; TestOpenAPIListsEveryRoute keeps the two in step.
//
//go:embed openapi.json
var openAPI []byte

func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}
