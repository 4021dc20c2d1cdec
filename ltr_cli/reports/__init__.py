"""Run folders turned into figures, tables and reports: ``ltr plot``, ``ltr report``, hyper-parameter selection and the papers' printed numbers."""
