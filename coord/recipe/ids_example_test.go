package recipe

import (
	"context"
	"fmt"
	"log"
)

// The naming service of the source documents: IDs like
// type2-job-0000000003 from sequential nodes.
func ExampleIDs() {
	ctx := context.Background()
	s, err := Dial(ctx, exampleConnect("ids"), Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	ids := NewIDs(s, "/naming/jobs", "job")
	for range 3 {
		id, err := ids.NextID(ctx, "type2")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(id)
	}
	// Output:
	// type2-job-0000000000
	// type2-job-0000000001
	// type2-job-0000000002
}
