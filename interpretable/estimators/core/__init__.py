"""What every estimator shares: the scikit-learn surface (:mod:`.base`, :mod:`.classifier`),
the one batching loop and ``explain`` (:mod:`.inference`), the fit transaction and the skorch
side (:mod:`.training`, :mod:`.nets`), persistence (:mod:`.persistence`, :mod:`.model_folder`,
:mod:`.state`), and the explanation methods' contract and loop (:mod:`.explainer`,
:mod:`.explain_loop`, :mod:`.attributions`)."""
