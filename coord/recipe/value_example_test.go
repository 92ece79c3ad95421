package recipe

import (
	"context"
	"fmt"
	"log"
	"time"
)

// Configuration publish/subscribe, as the source documents' database
// switch: subscribers follow /app1/database_config; the publisher writes
// it.
func ExampleWatchValue() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Dial(ctx, exampleConnect("config"), Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	if err := s.EnsurePath(ctx, "/app1/database_config"); err != nil {
		log.Fatal(err)
	}
	if _, err := s.Set(ctx, "/app1/database_config", []byte("db1.example:3306"), -1); err != nil {
		log.Fatal(err)
	}

	config, err := WatchValue(ctx, s, "/app1/database_config")
	if err != nil {
		log.Fatal(err)
	}
	defer config.Close()
	data, _, _ := config.Get()
	fmt.Println("connect to", string(data))

	// The publisher switches databases.
	if _, err := s.Set(ctx, "/app1/database_config", []byte("db2.example:3306"), -1); err != nil {
		log.Fatal(err)
	}
	for range config.Changes() {
		if data, _, _ := config.Get(); string(data) == "db2.example:3306" {
			fmt.Println("switch to", string(data))
			break
		}
	}
	// Output:
	// connect to db1.example:3306
	// switch to db2.example:3306
}
