"""Rate studies (the main kind): type I error, power and reliability of the tests on simulated annotation
studies; their config, trial engine, results store, summaries and figures."""
