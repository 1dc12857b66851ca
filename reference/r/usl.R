# Reference values for dbscope's Universal Scalability Law fit (crates/analysis/src/usl.rs, issue 15).
# Run from this directory:  Rscript usl.R > usl.out
# Writes the synthetic data sets to usl/*.csv (n,x) and prints, per data set, R's nls fit
#   X(N) = lambda N / (1 + sigma (N-1) + kappa N (N-1)),  sigma, kappa >= 0  (algorithm "port")
# as lines `<set> <lambda> <sigma> <kappa> <rss>` with 15 significant digits.
usl <- function(n, l, s, k) l * n / (1 + s * (n - 1) + k * n * (n - 1))
set.seed(15)
n <- c(1, 2, 4, 8, 16, 32, 64)
sets <- list(
  exact   = data.frame(n = n, x = usl(n, 1000, 0.05, 0.001)),
  noisy   = data.frame(n = n, x = usl(n, 1000, 0.05, 0.001) * (1 + rnorm(length(n), 0, 0.03))),
  kappa0  = data.frame(n = n, x = usl(n, 500, 0.1, 0) * (1 + rnorm(length(n), 0, 0.02))),
  repeats = data.frame(n = rep(c(1, 2, 4, 8, 16), each = 3),
                       x = usl(rep(c(1, 2, 4, 8, 16), each = 3), 2500, 0.02, 0.0005) *
                           (1 + rnorm(15, 0, 0.05))),
  # kappa = 0 with the last point 8% high: unconstrained, kappa would be negative; at the bound.
  bound   = data.frame(n = n, x = usl(n, 500, 0.1, 0) * c(1, 1, 1, 1, 1, 1, 1.08))
)
for (name in names(sets)) {
  d <- sets[[name]]
  write.csv(d, file.path("usl", paste0(name, ".csv")), row.names = FALSE)
  # Start from the linearised fit N/X = a + b (N-1) + c N (N-1), as dbscope does.
  lin <- coef(lm(I(n / x) ~ I(n - 1) + I(n * (n - 1)), data = d))
  start <- list(l = 1 / lin[[1]], s = max(lin[[2]] / lin[[1]], 1e-6), k = max(lin[[3]] / lin[[1]], 1e-9))
  f <- nls(x ~ l * n / (1 + s * (n - 1) + k * n * (n - 1)), data = d, start = start,
           algorithm = "port", lower = c(0, 0, 0),
           control = nls.control(maxiter = 1000, tol = 1e-12, scaleOffset = 1))
  p <- coef(f)
  cat(name, formatC(c(p[["l"]], p[["s"]], p[["k"]], sum(resid(f)^2)), digits = 15, format = "g"), "\n")
}
