/* model.h -- the data model: table and column names every source maps to. */
#ifndef NSL_CORE_MODEL_H
#define NSL_CORE_MODEL_H

#include "nsl/nsl.h"

typedef struct nsl_model_column {
  const char *name;
  nsl_type type;
  int is_time;        /* shifted by the report's time offset when traces align */
} nsl_model_column;

typedef struct nsl_model_table {
  const char *name;
  const nsl_model_column *cols;   /* ended by {NULL} */
} nsl_model_table;

/* The model table called name, or NULL. */
const nsl_model_table *nsl__model_table(const char *name);
/* The column of a model table, or NULL. */
const nsl_model_column *nsl__model_column(const nsl_model_table *t, const char *name);

#endif
