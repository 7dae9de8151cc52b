// Package criterion parses a user's criterion over task losses (an
// expression such as "(seg*normal)/(0.001+depth)" or a preset such as
// "wd:0.2,0.8") and evaluates it with exact derivatives ∂F/∂ℓ.
package criterion
