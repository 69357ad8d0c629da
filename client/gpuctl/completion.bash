# client/gpuctl/completion.bash — bash completion for gpuctl.
#
# make install puts it in $(BASHCOMPDIR)/gpuctl, where bash-completion loads
# it the first time gpuctl is completed; without bash-completion, source it
# (it needs bash 4.2 or later and nothing else).
#
# Completes gpuctl's global options, its commands and each command's
# switches (the tables below follow client/gpuctl/commands.c: make
# test-completion fails when 'gpuctl help COMMAND' names a switch they
# lack), and from the gpud at hand (--url and --token on the line, else
# $GPUD_URL and $GPUD_TOKEN): kernel names (gpuctl kernels --names), for
# 'gpuctl run KERNEL' the kernel's inputs and scalars as NAME= words and its
# outputs as -o NAME= (gpuctl kernels --args KERNEL), and kept buffers'
# handles (gpuctl ls --json), plus .npy files and directories for values.
# Questions to gpud are quiet (stderr discarded) and short: each is ended
# after $GPUCTL_COMPLETION_TIMEOUT seconds (default 2); with no gpud
# answering they complete nothing.

_gpuctl_global_options='--url --token --timeout -q --quiet -v --verbose -V --version -h --help'
_gpuctl_commands='run upload download free ls kernels kernel status demo help'

# The switches of command $1 ("kernel add" and "kernel rm" apart).
_gpuctl_switches() {
	case $1 in
	run) echo '-o --output --json --device --help' ;;
	upload) echo '--keep --device --help' ;;
	download) echo '-o --output --help' ;;
	free) echo '--tenant --help' ;;
	ls) echo '--all --json --help' ;;
	kernels) echo '--json --names --custom --args --help' ;;
	kernel) echo '--help' ;;
	'kernel add')
		echo '--source --entry --sig --elementwise --block --blocks-per-sm --fast-math' \
			'--max-registers --shared --unpinned --help'
		;;
	'kernel rm') echo '--shared --help' ;;
	status) echo '--wait --json --help' ;;
	demo) echo '--runs --help' ;;
	help) echo '--help' ;;
	esac
}

# bash splits the line at $COMP_WORDBREAKS (':' and '=' among them), so
# 'x=@x.npy' and 'ipc:///run/gpud/gpud.sock' arrive in pieces. Joins the
# pieces that touch in $COMP_LINE back into gpuctl's words. Sets words,
# cword, cur (the current word up to the cursor) and strip: how much of cur
# lies before the part readline replaces, which starts after the last '=' or
# ':' of the word (where those are in $COMP_WORDBREAKS; not after an '@'
# inside a word, though '@' is there too).
_gpuctl_words() {
	local line=${COMP_LINE-} i pos=0 start w ok=1 wb
	local -a starts=()
	words=() cword=0 cur='' strip=0
	if [[ -n $line ]]; then
		for ((i = 0; i < ${#COMP_WORDS[@]}; i++)); do
			w=${COMP_WORDS[i]}
			start=$pos
			while [[ ${line:pos:1} == [[:space:]] ]]; do
				pos=$((pos + 1))
			done
			if [[ ${line:pos:${#w}} != "$w" ]]; then
				ok=0
				break
			fi
			if ((i > 0 && pos == start)); then
				words[${#words[@]} - 1]+=$w
			else
				words+=("$w")
				starts+=("$pos")
			fi
			pos=$((pos + ${#w}))
			((i == COMP_CWORD)) && cword=$((${#words[@]} - 1))
		done
	fi
	if [[ -z $line || $ok == 0 ]]; then
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
		cur=${words[cword]-}
		return
	fi
	cur=${words[cword]-}
	if [[ -n ${COMP_POINT-} ]] && ((COMP_POINT >= starts[cword] &&
		COMP_POINT - starts[cword] < ${#cur})); then
		cur=${cur:0:COMP_POINT - starts[cword]}
	fi
	wb=${COMP_WORDBREAKS-=:}
	for ((i = ${#cur} - 1; i >= 0; i--)); do
		if [[ ${cur:i:1} == [=:] && $wb == *"${cur:i:1}"* ]]; then
			strip=$((i + 1))
			break
		fi
	done
}

# gpuctl "$@" against the gpud of the line being completed: stdout only,
# ended after $GPUCTL_COMPLETION_TIMEOUT seconds.
_gpuctl_ask() {
	local t=${GPUCTL_COMPLETION_TIMEOUT:-2} bin=${words[0]}
	# shellcheck disable=SC2088 # a literal ~/ as typed, made $HOME/
	[[ $bin == '~/'* ]] && bin=$HOME/${bin#'~/'}
	if type -P timeout >/dev/null; then
		timeout "$t" "$bin" "${conn[@]}" --timeout "$t" -q "$@" </dev/null 2>/dev/null
	else
		"$bin" "${conn[@]}" --timeout "$t" -q "$@" </dev/null 2>/dev/null
	fi
}

# The kept buffers' handles (16 hex digits), one per line.
_gpuctl_handles() {
	local line re='"handle": *"([0-9a-f]{16})"'
	while IFS= read -r line; do
		[[ $line =~ $re ]] && echo "${BASH_REMATCH[1]}"
	done < <(_gpuctl_ask ls --json)
}

# Adds the words of $1 (space-separated) that start with cur to COMPREPLY.
_gpuctl_add() {
	local w
	for w in $1; do
		[[ $w == "$cur"* ]] && COMPREPLY+=("$w")
	done
}

# Adds the lines of stdin that start with cur to COMPREPLY.
_gpuctl_add_lines() {
	local w
	while IFS= read -r w; do
		[[ -n $w && $w == "$cur"* ]] && COMPREPLY+=("$w")
	done
}

# Files ending in $2 (a glob, e.g. '*.npy') and directories (with '/'), for
# the text after the prefix $1 in cur: each as prefix + path. Hidden ones
# only when the text asks for them.
_gpuctl_files() {
	local prefix=$1 glob=$2 p part=${cur:${#1}} q
	# shellcheck disable=SC2053 # glob is a pattern
	while IFS= read -r p; do
		if [[ ${p##*/} == .* && ${part##*/} != .* ]]; then
			continue
		elif [[ -d $p ]]; then
			printf -v q '%q' "$p"
			COMPREPLY+=("$prefix$q/")
		elif [[ $p == $glob ]]; then
			printf -v q '%q' "$p"
			COMPREPLY+=("$prefix$q")
		fi
	done < <(compgen -f -- "$part")
}

# What follows 'gpuctl run': a switch, the kernel, NAME=VALUE or -o's value.
_gpuctl_run() {
	local i w kernel='' name role v
	local -a given=()
	for ((i = ci + 1; i < cword; i++)); do
		w=${words[i]}
		case $w in
		-o | --output) i=$((i + 1)) ;;
		-*) ;;
		*=*) given+=("${w%%=*}") ;;
		*) [[ -z $kernel ]] && kernel=$w ;;
		esac
	done
	if [[ $prev == -o || $prev == --output ]]; then
		# -o [NAME=]FILE.npy: the kernel's outputs by name, or a file
		if [[ $cur == *=* ]]; then
			_gpuctl_files "${cur%%=*}=" '*.npy'
		else
			while read -r name role _; do
				[[ $role == out && $name == "$cur"* ]] && COMPREPLY+=("$name=")
			done < <([[ -n $kernel ]] && _gpuctl_ask kernels --args "$kernel")
			_gpuctl_files '' '*.npy'
		fi
	elif [[ $cur == -* ]]; then
		_gpuctl_add "$(_gpuctl_switches run)"
	elif [[ -z $kernel ]]; then
		_gpuctl_add_lines < <(_gpuctl_ask kernels --names)
	elif [[ $cur == *=* ]]; then
		# a value: %HANDLE, @FILE, a .npy file or a directory
		v=${cur#*=}
		if [[ $v == %* ]]; then
			while read -r w; do
				w=${cur%%=*}=%$w
				[[ $w == "$cur"* ]] && COMPREPLY+=("$w")
			done < <(_gpuctl_handles)
		elif [[ $v == @* ]]; then
			_gpuctl_files "${cur%%=*}=@" '*.npy'
		else
			_gpuctl_files "${cur%%=*}=" '*.npy'
		fi
	else
		# the kernel's inputs and scalars not given yet, as NAME=
		while read -r name role _; do
			[[ $role == out || $name != "$cur"* ]] && continue
			for w in "${given[@]}"; do
				[[ $w == "$name" ]] && continue 2
			done
			COMPREPLY+=("$name=")
		done < <(_gpuctl_ask kernels --args "$kernel")
	fi
}

_gpuctl() {
	local -a words=() conn=() replies=()
	local cword cur strip prev i cmd='' ci=0 sub w
	COMPREPLY=()
	_gpuctl_words
	prev=${words[cword - 1]-}

	# gpuctl's own options come before the command; --url and --token are
	# passed on to the questions asked of gpud.
	for ((i = 1; i < cword; i++)); do
		w=${words[i]}
		case $w in
		--url | --token | -u | -T)
			i=$((i + 1))
			w=${words[i]-}
			w=${w#[\"\']}
			conn+=("${words[i - 1]}" "${w%[\"\']}")
			;;
		--timeout | -t) i=$((i + 1)) ;;
		--url=* | --token=*) conn+=("$w") ;;
		-*) ;;
		*)
			cmd=$w
			ci=$i
			break
			;;
		esac
	done

	if [[ -z $cmd ]]; then
		case $prev in
		--url | -u) _gpuctl_add 'ipc:// tcp:// tls+tcp://' ;;
		--token | -T | --timeout | -t) ;;
		*)
			if [[ $cur == -* ]]; then
				_gpuctl_add "$_gpuctl_global_options"
			else
				_gpuctl_add "$_gpuctl_commands"
			fi
			;;
		esac
	else
		case $cmd in
		run) _gpuctl_run ;;
		upload)
			if [[ $cur == -* ]]; then
				_gpuctl_add "$(_gpuctl_switches upload)"
			elif [[ $cur == @* ]]; then
				_gpuctl_files '@' '*.npy'
			else
				_gpuctl_files '' '*.npy'
			fi
			;;
		download)
			if [[ $prev == -o || $prev == --output ]]; then
				_gpuctl_files '' '*.npy'
			elif [[ $cur == -* ]]; then
				_gpuctl_add "$(_gpuctl_switches download)"
			else
				_gpuctl_add_lines < <(_gpuctl_handles)
			fi
			;;
		free)
			if [[ $prev == --tenant ]]; then
				:
			elif [[ $cur == -* ]]; then
				_gpuctl_add "$(_gpuctl_switches free)"
			else
				_gpuctl_add_lines < <(_gpuctl_handles)
			fi
			;;
		kernels)
			if [[ $prev == --args ]]; then
				_gpuctl_add_lines < <(_gpuctl_ask kernels --names)
			elif [[ $cur == -* ]]; then
				_gpuctl_add "$(_gpuctl_switches kernels)"
			fi
			;;
		kernel)
			sub=${words[ci + 1]-}
			if ((cword == ci + 1)); then
				_gpuctl_add 'add rm'
			elif [[ $sub == rm ]]; then
				if [[ $cur == -* ]]; then
					_gpuctl_add "$(_gpuctl_switches 'kernel rm')"
				elif ((cword == ci + 2)); then
					_gpuctl_add_lines < <(_gpuctl_ask kernels --names)
				fi
			elif [[ $sub == add ]]; then
				case $prev in
				--source) _gpuctl_files '' '*.cu' ;;
				--entry | --sig | --elementwise | --block | --blocks-per-sm | --max-registers) ;;
				*) [[ $cur == -* ]] && _gpuctl_add "$(_gpuctl_switches 'kernel add')" ;;
				esac
			fi
			;;
		help) ((cword == ci + 1)) && _gpuctl_add "$_gpuctl_commands" ;;
		ls | status | demo)
			case $prev in
			--wait | --runs) ;;
			*) [[ $cur == -* ]] && _gpuctl_add "$(_gpuctl_switches "$cmd")" ;;
			esac
			;;
		esac
	fi

	# bash replaces only the text after its last word-break character:
	# candidates lose what comes before it; NAME= and dir/ take no space.
	for w in "${COMPREPLY[@]}"; do
		replies+=("${w:strip}")
		if [[ $w == *= || $w == */ ]]; then
			compopt -o nospace 2>/dev/null
		fi
	done
	COMPREPLY=("${replies[@]}")
	return 0
}

complete -F _gpuctl gpuctl
