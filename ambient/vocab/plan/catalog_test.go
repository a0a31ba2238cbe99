package plan_test

// The plan package's tests hold the whole module's code catalog: they link every package that
// registers its codes with plan.RegisterCodes (a code constant the catalog misses fails
// TestEveryCodeConstantIsInTheCatalog, naming the file to import here).
import _ "github.com/ambientkit/ambientkit/migrate"
