// Package criterion parses a user's criterion over task losses (an
// expression such as "(seg*normal)/(0.001+depth)" or a preset such as
// "wd:0.2,0.8") and evaluates it with exact derivatives ∂F/∂ℓ.
//
// # Expressions
//
// Parse reads numbers (2, 0.5, .5, 1e-3), task names, + - * /, unary minus,
// parentheses, and the functions log exp sqrt abs sin cos tanh, pow(a, b),
// min(a, b, ...) and max(a, b, ...). Nothing else is accepted; in
// particular '^' and '**' are rejected with a message suggesting pow.
// Errors carry the 1-based column (*SyntaxError) or list the known tasks
// (*UnknownNameError).
//
// Derivatives are exact: the expression is compiled to a tape and ∂F/∂ℓ is
// accumulated by one reverse sweep. At kinks a subgradient is chosen:
// abs'(0) = 0, and min/max pass the whole derivative to the first argument
// (leftmost) that attains the extreme.
//
// Evaluation never returns a silent NaN: log of a non-positive number, sqrt
// of a negative number, division by zero, pow of a negative base to a
// non-integer exponent or of zero to a negative exponent, an infinite
// derivative (sqrt at 0, pow(0, b) with 0 < b < 1), and any value or
// derivative that overflows to ±Inf or NaN are reported as *EvalError
// naming the operation and the sub-expression.
//
// # Terms and drift
//
// Besides the task losses an expression may read terms (losses the caller
// computes that are not tasks: they take no part in the Pareto set; pass
// their names to Parse) and drift, ‖θ − θ₀‖², the squared distance of the
// trainable parameters from their values at the start of the run (L2-SP).
// Their θ-gradients lie outside the span of the task gradients. Eval then
// reads one value per name of VarsOf: the tasks, the terms, and drift when
// the expression uses it.
//
// # Presets
//
// With m tasks and references r_1..r_m (Ye & Liu 2022):
//
//	wd:r1,...,rm      Σ (ℓ_i − r_i)² / r_i                      (r_i > 0)
//	ratio:r1,...,rm   Σ p_i log(m p_i), p_i = r_iℓ_i / Σ_s r_sℓ_s (r_i > 0, ℓ_i > 0)
//	cosine:r1,r2      −cos(π(ℓ1 − r1)/2) + (cos(π(ℓ2 − r2)) + 1)²  (m = 2)
//
// A preset is also an operand of an expression: "wd:0.2,0.8 + 0.01*drift".
// Its references run to the next + * / or parenthesis, so inside a
// function's arguments it goes in parentheses: "max((wd:1,1), drift)".
//
// The multi-point "energy" criterion (ParseMulti) spreads N models over the
// Pareto front; see Energy.
package criterion
