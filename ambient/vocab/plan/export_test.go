package plan

import "reflect"

// WireType is the type a Plan's document is written as, for the schema tests.
var WireType = reflect.TypeOf(wirePlan{})
