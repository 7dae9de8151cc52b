package undocumented

// Good is documented.
type Good struct{}

// Method is documented.
func (Good) Method() {}

func (Good) Bare() {}

// A Typed thing, with an article.
type Typed int

type Bare int

// Wrongly named: the comment does not start with the name.
func Misnamed() {}

func Undocumented() {}

// Limits are grouped and share this comment.
const (
	Low  = 1
	High = 2
)

const (
	Alone = 1 // Alone has a line comment.
	Lost  = 2
)

// Single is documented.
var Single = 3

var Naked = 4

func unexported() {}
