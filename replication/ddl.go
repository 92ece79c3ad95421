package replication

import (
	"fmt"
	"strings"
)

// This file finds the table and database names in the DDL statements the
// source logs, so that they can be filtered and routed. It is a small
// tokenizer plus a recogniser for the statement shapes below — not a SQL
// parser: everything outside the names is copied through unchanged, so the
// target executes the source's text with only the names rewritten.
//
//	CREATE [OR REPLACE] [TEMPORARY] TABLE [IF NOT EXISTS] t [(] LIKE t2 …
//	CREATE … TABLE … REFERENCES t3 …            (foreign keys)
//	ALTER [ONLINE] [IGNORE] TABLE [IF EXISTS] t … [RENAME [TO|AS] t2] … [REFERENCES t3]
//	DROP [TEMPORARY] TABLE[S] [IF EXISTS] t [, t2 …]
//	RENAME TABLE[S] t [WAIT n|NOWAIT] TO t2 [, t3 TO t4 …]
//	TRUNCATE [TABLE] t
//	CREATE [OR REPLACE] [UNIQUE|FULLTEXT|SPATIAL] INDEX [IF NOT EXISTS] i [USING x] ON t …
//	DROP INDEX [IF EXISTS] i ON t
//	CREATE|ALTER|DROP DATABASE|SCHEMA [IF [NOT] EXISTS] d
//
// Names may be `quoted` or bare, qualified (db.t) or not; comments are
// skipped, and the bodies of executable comments (/*! … */, /*M! … */)
// are read as code, as the server does. Anything else — views, triggers,
// routines, users, grants — is ddlOther and is not replicated: their
// bodies name tables in ways a rename cannot follow safely.

// ddlKind is the shape of a recognised statement.
type ddlKind int

const (
	ddlOther ddlKind = iota
	ddlCreateTable
	ddlAlterTable
	ddlDropTable
	ddlRenameTable
	ddlTruncate
	ddlCreateIndex
	ddlDropIndex
	ddlCreateDatabase
	ddlAlterDatabase
	ddlDropDatabase
)

var ddlKindNames = [...]string{"other", "CREATE TABLE", "ALTER TABLE", "DROP TABLE", "RENAME TABLE",
	"TRUNCATE", "CREATE INDEX", "DROP INDEX", "CREATE DATABASE", "ALTER DATABASE", "DROP DATABASE"}

func (k ddlKind) String() string { return ddlKindNames[k] }

// refRole says what a name in a statement is.
type refRole int

const (
	roleSubject   refRole = iota // the table or database the statement changes
	roleRenameTo                 // the new name of a RENAME
	roleLike                     // CREATE TABLE … LIKE source
	roleReference                // REFERENCES parent (a foreign key)
)

// nameRef is one table or database name in the statement text, at
// text[start:end]. An implicit database (ALTER DATABASE without a name)
// has start == end, at the place the name would go.
type nameRef struct {
	start, end int
	db, table  string // table is empty for a database name
	role       refRole
	isDB       bool
}

// ddlStatement is a parsed DDL statement.
type ddlStatement struct {
	kind      ddlKind
	text      string
	refs      []nameRef
	temporary bool // DROP TEMPORARY TABLE
	ifExists  bool // DROP TABLE IF EXISTS
}

// tokKind is the kind of a token.
type tokKind int

const (
	tokWord   tokKind = iota // bare identifier or keyword
	tokQuoted                // `quoted identifier`
	tokString                // 'string' or "string"
	tokPunct                 // any other single character
)

type token struct {
	kind       tokKind
	val        string // identifier without quotes; punctuation character
	start, end int
}

// is reports whether t is the bare keyword kw (case-insensitive).
func (t token) is(kw string) bool { return t.kind == tokWord && strings.EqualFold(t.val, kw) }

func (t token) isIdent() bool { return t.kind == tokWord || t.kind == tokQuoted }

// tokenize splits a statement into tokens, dropping whitespace and
// comments. It never fails: an unterminated quote ends at the end of text.
func tokenize(s string) []token {
	var toks []token
	inExec := false // inside /*! … */, whose closing */ is not a comment
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '#' || (c == '-' && strings.HasPrefix(s[i:], "--") && (i+2 == len(s) || s[i+2] <= ' ')):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '*' && inExec && strings.HasPrefix(s[i:], "*/"):
			inExec = false
			i += 2
		case c == '/' && strings.HasPrefix(s[i:], "/*"):
			rest := s[i+2:]
			if strings.HasPrefix(rest, "!") || strings.HasPrefix(rest, "M!") {
				// Executable comment: skip the marker and version digits,
				// then read the body as code.
				i += 2 + strings.IndexByte(rest, '!') + 1
				for i < len(s) && s[i] >= '0' && s[i] <= '9' {
					i++
				}
				inExec = true
				continue
			}
			end := strings.Index(rest, "*/")
			if end < 0 {
				i = len(s)
			} else {
				i += 2 + end + 2
			}
		case c == '`':
			start := i
			var b strings.Builder
			i++
			for i < len(s) {
				if s[i] == '`' {
					if i+1 < len(s) && s[i+1] == '`' {
						b.WriteByte('`')
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteByte(s[i])
				i++
			}
			toks = append(toks, token{kind: tokQuoted, val: b.String(), start: start, end: i})
		case c == '\'' || c == '"':
			start := i
			i++
			for i < len(s) {
				if s[i] == '\\' {
					i += 2
					continue
				}
				if s[i] == c {
					if i+1 < len(s) && s[i+1] == c {
						i += 2
						continue
					}
					i++
					break
				}
				i++
			}
			if i > len(s) {
				i = len(s)
			}
			toks = append(toks, token{kind: tokString, val: s[start:i], start: start, end: i})
		case isWordByte(c):
			start := i
			for i < len(s) && isWordByte(s[i]) {
				i++
			}
			toks = append(toks, token{kind: tokWord, val: s[start:i], start: start, end: i})
		default:
			toks = append(toks, token{kind: tokPunct, val: s[i : i+1], start: i, end: i + 1})
			i++
		}
	}
	return toks
}

// isWordByte reports bytes of a bare identifier: letters, digits, _ and $,
// and every byte of a multi-byte UTF-8 character.
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

// parser walks the tokens of one statement.
type parser struct {
	toks []token
	i    int
	st   *ddlStatement
}

func (p *parser) peek(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return token{kind: tokPunct, val: "", start: len(p.st.text), end: len(p.st.text)}
}

// accept consumes the keyword sequence kws if it is next.
func (p *parser) accept(kws ...string) bool {
	for n, kw := range kws {
		if !p.peek(n).is(kw) {
			return false
		}
	}
	p.i += len(kws)
	return true
}

func (p *parser) acceptPunct(c string) bool {
	if t := p.peek(0); t.kind == tokPunct && t.val == c {
		p.i++
		return true
	}
	return false
}

// tableName consumes a possibly qualified table name and records it.
func (p *parser) tableName(role refRole) bool {
	first := p.peek(0)
	if !first.isIdent() {
		return false
	}
	ref := nameRef{start: first.start, end: first.end, table: first.val, role: role}
	p.i++
	if dot := p.peek(0); dot.kind == tokPunct && dot.val == "." {
		if second := p.peek(1); second.isIdent() {
			ref.db, ref.table, ref.end = first.val, second.val, second.end
			p.i += 2
		}
	}
	p.st.refs = append(p.st.refs, ref)
	return true
}

func (p *parser) dbName() bool {
	t := p.peek(0)
	if !t.isIdent() {
		return false
	}
	p.st.refs = append(p.st.refs, nameRef{start: t.start, end: t.end, db: t.val, isDB: true})
	p.i++
	return true
}

// scanTail records the names that can appear after the subject of CREATE
// and ALTER TABLE: foreign key parents, and ALTER's RENAME TO.
func (p *parser) scanTail(alter bool) {
	for p.i < len(p.toks) {
		switch t := p.peek(0); {
		case t.is("REFERENCES"):
			p.i++
			p.tableName(roleReference)
		case alter && t.is("WITH") && p.peek(1).is("TABLE"):
			// EXCHANGE PARTITION p WITH TABLE t2
			p.i += 2
			p.tableName(roleReference)
		case alter && t.is("RENAME"):
			p.i++
			next := p.peek(0)
			if next.is("COLUMN") || next.is("INDEX") || next.is("KEY") || next.is("CONSTRAINT") {
				continue
			}
			if !p.accept("TO") {
				p.accept("AS")
			}
			p.tableName(roleRenameTo)
		default:
			p.i++
		}
	}
}

// parseDDL recognises a DDL statement and the names in it.
func parseDDL(text string) ddlStatement {
	st := ddlStatement{text: text}
	p := &parser{toks: tokenize(text), st: &st}
	switch {
	case p.accept("CREATE"):
		p.accept("OR", "REPLACE")
		if p.accept("DATABASE") || p.accept("SCHEMA") {
			p.accept("IF", "NOT", "EXISTS")
			if p.dbName() {
				st.kind = ddlCreateDatabase
			}
			return st
		}
		save := p.i
		_ = p.accept("UNIQUE") || p.accept("FULLTEXT") || p.accept("SPATIAL")
		if p.accept("INDEX") || p.accept("KEY") {
			return p.indexOn(ddlCreateIndex, true)
		}
		p.i = save
		temporary := p.accept("TEMPORARY")
		if !p.accept("TABLE") {
			return st
		}
		st.temporary = temporary
		p.accept("IF", "NOT", "EXISTS")
		if !p.tableName(roleSubject) {
			return st
		}
		st.kind = ddlCreateTable
		if p.accept("LIKE") || (p.acceptPunct("(") && p.accept("LIKE")) {
			p.tableName(roleLike)
		}
		p.scanTail(false)
	case p.accept("ALTER"):
		p.accept("ONLINE")
		p.accept("IGNORE")
		switch {
		case p.accept("TABLE"):
			p.accept("IF", "EXISTS")
			if !p.tableName(roleSubject) {
				return st
			}
			st.kind = ddlAlterTable
			p.scanTail(true)
		case p.accept("DATABASE") || p.accept("SCHEMA"):
			// The name is optional: ALTER DATABASE CHARACTER SET … changes
			// the session's default database.
			if t := p.peek(0); t.isIdent() && !isDatabaseOption(t) {
				p.dbName()
			} else {
				// Right after the keyword: the next token may be
				// behind a comment that runs to the end of the text.
				at := p.toks[p.i-1].end
				st.refs = append(st.refs, nameRef{start: at, end: at, isDB: true})
			}
			st.kind = ddlAlterDatabase
		}
	case p.accept("DROP"):
		switch {
		case p.accept("DATABASE") || p.accept("SCHEMA"):
			p.accept("IF", "EXISTS")
			if p.dbName() {
				st.kind = ddlDropDatabase
			}
			return st
		case p.accept("INDEX") || p.accept("KEY"):
			return p.indexOn(ddlDropIndex, false)
		}
		st.temporary = p.accept("TEMPORARY")
		if !p.accept("TABLE") && !p.accept("TABLES") {
			return st
		}
		st.ifExists = p.accept("IF", "EXISTS")
		for p.tableName(roleSubject) {
			if !p.acceptPunct(",") {
				break
			}
		}
		if len(st.refs) > 0 {
			st.kind = ddlDropTable
		}
	case p.accept("RENAME"):
		if !p.accept("TABLE") && !p.accept("TABLES") {
			return st
		}
		for p.tableName(roleSubject) {
			if p.accept("WAIT") {
				p.i++ // the timeout
			}
			p.accept("NOWAIT")
			if !p.accept("TO") || !p.tableName(roleRenameTo) || !p.acceptPunct(",") {
				break
			}
		}
		if len(st.refs) >= 2 && len(st.refs)%2 == 0 {
			st.kind = ddlRenameTable
		} else {
			st.refs = nil
		}
	case p.accept("TRUNCATE"):
		p.accept("TABLE")
		if p.tableName(roleSubject) {
			st.kind = ddlTruncate
		}
	}
	return st
}

// indexOn reads "[IF [NOT] EXISTS] name [USING x] ON table" after
// CREATE … INDEX or DROP INDEX.
func (p *parser) indexOn(kind ddlKind, create bool) ddlStatement {
	if create {
		p.accept("IF", "NOT", "EXISTS")
	} else {
		p.accept("IF", "EXISTS")
	}
	if !p.peek(0).isIdent() {
		return *p.st
	}
	p.i++
	for p.i < len(p.toks) && !p.peek(0).is("ON") {
		p.i++
	}
	if p.accept("ON") && p.tableName(roleSubject) {
		p.st.kind = kind
	}
	return *p.st
}

// isDatabaseOption reports the words that can follow ALTER DATABASE when
// no name is given.
func isDatabaseOption(t token) bool {
	if t.kind != tokWord {
		return false
	}
	switch strings.ToUpper(t.val) {
	case "CHARACTER", "CHARSET", "DEFAULT", "COLLATE", "COMMENT", "UPGRADE", "READ", "ENCRYPTION":
		return true
	}
	return false
}

// quoteIdent quotes a name for MySQL, doubling any backquote inside it.
func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// qualified renders `db`.`table`.
func qualified(db, table string) string { return quoteIdent(db) + "." + quoteIdent(table) }

// ddlPlan is what to do with one source DDL statement on the target.
type ddlPlan struct {
	apply bool   // false: not replicated (filtered out, or not a table/database statement)
	sql   string // the statement to run on the target, names routed
	why   string // when !apply, the reason, for the log
}

// plan decides whether st reaches the target and rewrites its names:
// every table name becomes `db`.`table` after routing (an unqualified
// name is resolved against defaultDB, the source session's database),
// every database name is routed.
func (st ddlStatement) plan(defaultDB string, f *filter) (ddlPlan, error) {
	if st.kind == ddlOther {
		return ddlPlan{why: "not a table or database statement"}, nil
	}
	refs := make([]nameRef, len(st.refs))
	copy(refs, st.refs)
	for i := range refs {
		if refs[i].db == "" {
			if defaultDB == "" {
				return ddlPlan{}, fmt.Errorf("%s %q: a name without a database, and the statement has no default database", st.kind, refs[i].table)
			}
			refs[i].db = defaultDB
		}
	}
	included := false
	switch st.kind {
	case ddlCreateDatabase, ddlAlterDatabase:
		included = f.dbIncluded(refs[0].db)
	case ddlDropDatabase:
		included = f.dbWhollyIncluded(refs[0].db)
	case ddlRenameTable:
		// A rename in or out of the replicated set is applied whole: the
		// table's history on the target must follow it either way.
		for _, r := range refs {
			included = included || f.tableIncluded(r.db, r.table)
		}
	case ddlAlterTable:
		for _, r := range refs {
			if r.role == roleSubject || r.role == roleRenameTo {
				included = included || f.tableIncluded(r.db, r.table)
			}
		}
	case ddlDropTable:
		var keep []nameRef
		for _, r := range refs {
			if f.tableIncluded(r.db, r.table) {
				keep = append(keep, r)
			}
		}
		if len(keep) == 0 {
			return ddlPlan{why: "no table of the statement is replicated"}, nil
		}
		if len(keep) < len(refs) {
			return ddlPlan{apply: true, sql: st.dropSubset(keep, f)}, nil
		}
		included = true
	default:
		included = f.tableIncluded(refs[0].db, refs[0].table)
	}
	if !included {
		return ddlPlan{why: "its tables are not replicated"}, nil
	}
	var b strings.Builder
	last := 0
	for _, r := range refs {
		b.WriteString(st.text[last:r.start])
		name := qualified(f.route(r.db, r.table))
		if r.isDB {
			name = quoteIdent(f.routeDB(r.db))
		}
		// An implicit name needs room; and a backquote right against a
		// name (only in text the server would refuse anyway) must not fuse
		// with the new quotes.
		if r.start == r.end || (r.start > 0 && st.text[r.start-1] == '`') {
			b.WriteByte(' ')
		}
		b.WriteString(name)
		if r.start == r.end || (r.end < len(st.text) && st.text[r.end] == '`') {
			b.WriteByte(' ')
		}
		last = r.end
	}
	b.WriteString(st.text[last:])
	return ddlPlan{apply: true, sql: b.String()}, nil
}

// dropSubset renders DROP TABLE for the replicated part of a statement
// that drops replicated and unreplicated tables together.
func (st ddlStatement) dropSubset(keep []nameRef, f *filter) string {
	var b strings.Builder
	b.WriteString("DROP ")
	if st.temporary {
		b.WriteString("TEMPORARY ")
	}
	b.WriteString("TABLE ")
	if st.ifExists {
		b.WriteString("IF EXISTS ")
	}
	for i, r := range keep {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(qualified(f.route(r.db, r.table)))
	}
	return b.String()
}
