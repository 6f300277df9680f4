/* version -- the lab's version, printed by --version and written in every CSV row and JSON */
#ifndef AMLA_VERSION_H
#define AMLA_VERSION_H

#define AMLA_VERSION "0.2.0"

#endif
