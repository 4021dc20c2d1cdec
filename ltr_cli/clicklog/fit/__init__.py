"""Click-model fitting: the parameters of PBM, UBM, the cascade, DCM, CCM, DBN and SDBN
estimated from a click log, and their log-likelihood and perplexity on held-out sessions.

The estimators are PyClick's (Markov's ``pyclick``): its EM updates with its priors (every
parameter starts at 1/2 and is a ratio (1 + numerator) / (2 + denominator), an EM one capped
at 1 - 10^-6), its closed forms for the cascade, DCM and SDBN, and its definitions of the
log-likelihood and the perplexity. Modules: the sessions as a grid and their split
(``grid``), the shared counting and the measures (``em``), the position models PBM and UBM
(``position``), the cascade family (``cascade``), the chain models DBN and CCM (``chain``)
and the command's record (``record``).
"""
