package plan

import _ "embed"

// jsonSchema is plan.schema.json: the JSON Schema (draft 2020-12) of the plan document of
// APIVersion as EncodeJSON writes it, generated from the Go types by the package's tests
// (go test ./ambient/vocab/plan -run JSONSchema -update), which fail when the two drift apart.
//
//go:embed plan.schema.json
var jsonSchema []byte

// JSONSchema returns the JSON Schema of the plan document of APIVersion, as EncodeJSON writes it,
// for programs that read plans to validate them with. (EncodeYAML may write the steps many nodes
// share once, forEachNode; the schema describes the JSON form, with every step listed.)
func JSONSchema() []byte { return append([]byte(nil), jsonSchema...) }
