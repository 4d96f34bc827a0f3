package fsguard

import "github.com/spf13/afero"

// file reports the name the caller used. Writes and reads through an open
// handle are not re-checked: the decision was made when it was opened.
type file struct {
	afero.File
	name string
}

func (f *file) Name() string { return f.name }

// named returns fl reporting name, wrapping it only when its own name
// differs.
func named(fl afero.File, name string) afero.File {
	if fl == nil || fl.Name() == name {
		return fl
	}
	return &file{File: fl, name: name}
}
